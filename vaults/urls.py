"""The vaults' routes and view set, made from their table (vaults/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import Vault

VIEWSETS = viewsets(TABLE, module=__name__, model=Vault)
urlpatterns = routes(TABLE, VIEWSETS)
