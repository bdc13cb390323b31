"""The lookup tables' routes and view set, made from their table (lookup_tables/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import AddressLookupTable

VIEWSETS = viewsets(TABLE, module=__name__, model=AddressLookupTable)
urlpatterns = routes(TABLE, VIEWSETS)
