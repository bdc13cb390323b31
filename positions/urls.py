"""The positions area's routes and view sets, made from its table (positions/endpoints.py;
tenancy/endpoints.py makes them)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE, VIEWSET_DOCS
from .models import Position

VIEWSETS = viewsets(TABLE, module=__name__, model=Position, docs=VIEWSET_DOCS)
urlpatterns = routes(TABLE, VIEWSETS)
