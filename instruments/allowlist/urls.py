"""The allow-list's routes and view set, made from its table (instruments/allowlist/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from ..models import FinancialInstrument
from .endpoints import TABLE

VIEWSETS = viewsets(TABLE, module=__name__, model=FinancialInstrument)
urlpatterns = routes(TABLE, VIEWSETS)
