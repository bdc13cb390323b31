"""Loans' routes and view sets, made from their table (loans/endpoints.py)."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import TABLE
from .models import Loan, LoanStrategy

VIEWSETS = viewsets(TABLE, module=__name__, model={"LoanViewSet": Loan, "LoanStrategyViewSet": LoanStrategy})
urlpatterns = routes(TABLE, VIEWSETS)
