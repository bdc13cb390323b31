"""The webhook registry's routes and view set, made from its table (webhooks/endpoints.py;
docs/webhooks.md)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import WebhookSubscription

VIEWSETS = viewsets(TABLE, module=__name__, model=WebhookSubscription)
urlpatterns = routes(TABLE, VIEWSETS)
