"""Blockchain accounts' routes and view sets, made from their table (accounts/endpoints.py);
threshold keys' sessions below."""

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import MEMBERS, TABLE, VIEWSET_DOCS
from .models import Account
from .mpc import endpoints as mpc

VIEWSETS = viewsets(TABLE, module=__name__, model=Account, docs=VIEWSET_DOCS, members=MEMBERS)
urlpatterns = routes(TABLE, VIEWSETS)

# Threshold keys (accounts/mpc; docs/threshold-signing.md). Signing sessions sit with the
# transactions they sign; their records and cryptography are this area's.

MPC_VIEWSETS = viewsets(mpc.TABLE, module=__name__, model=mpc.MODELS, members=mpc.MEMBERS)
urlpatterns += routes(mpc.TABLE, MPC_VIEWSETS)
