"""Financial instruments' routes and view set, made from their table (instruments/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import FinancialInstrument

VIEWSETS = viewsets(TABLE, module=__name__, model=FinancialInstrument)
urlpatterns = routes(TABLE, VIEWSETS)

# Allow-lists of allow-list transfer-hook instruments (instruments/allowlist/, docs/instruments.md).
from .allowlist.urls import urlpatterns as _allow_list  # noqa: E402

urlpatterns += _allow_list
