"""Market data's routes and view set, made from its table (marketdata/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import OnchainDataSource

VIEWSETS = viewsets(TABLE, module=__name__, model=OnchainDataSource)
urlpatterns = routes(TABLE, VIEWSETS)
