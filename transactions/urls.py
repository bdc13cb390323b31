"""Blockchain transactions' routes and view set, made from their table (transactions/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import Transaction

VIEWSETS = viewsets(TABLE, module=__name__, model=Transaction)
urlpatterns = routes(TABLE, VIEWSETS)
