"""Blockchain accounts' routes and view sets, made from their table (accounts/endpoints.py);
threshold keys' sessions below."""

from django.urls import path

from tenancy.endpoints import urlpatterns as routes
from tenancy.endpoints import viewsets

from .endpoints import MEMBERS, TABLE, VIEWSET_DOCS
from .models import Account

VIEWSETS = viewsets(TABLE, module=__name__, model=Account, docs=VIEWSET_DOCS, members=MEMBERS)
urlpatterns = routes(TABLE, VIEWSETS)

# Threshold keys (accounts/mpc; docs/threshold-signing.md). Signing sessions sit with the
# transactions they sign; their records and cryptography are this area's.
from .mpc.views import DkgViewSet, SigningSessionViewSet  # noqa: E402

urlpatterns += [
    path("accounts/dkg/status", DkgViewSet.as_view({"post": "status"}), name="dkg-status"),
    path("accounts/dkg/round1", DkgViewSet.as_view({"post": "round1"}), name="dkg-round1"),
    path("accounts/dkg/round2", DkgViewSet.as_view({"post": "round2"}), name="dkg-round2"),
    path("accounts/dkg/finish", DkgViewSet.as_view({"post": "finish"}), name="dkg-finish"),
    path("accounts/dkg/refresh", DkgViewSet.as_view({"post": "refresh"}), name="dkg-refresh"),
    path("transactions/dkg/open", SigningSessionViewSet.as_view({"post": "open"}), name="dkg-signing-open"),
    path("transactions/dkg/commit", SigningSessionViewSet.as_view({"post": "commit"}), name="dkg-signing-commit"),
    path("transactions/dkg/status", SigningSessionViewSet.as_view({"post": "status"}), name="dkg-signing-status"),
]
