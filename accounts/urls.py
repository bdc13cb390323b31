from django.urls import path

from .views import AccountViewSet, DurableNonceAccountViewSet

urlpatterns = [
    path("accounts", AccountViewSet.as_view({"post": "create", "patch": "update"}), name="accounts"),
    path("accounts/single", AccountViewSet.as_view({"post": "details"}), name="account-details"),
    path("accounts/single/private-key", AccountViewSet.as_view({"post": "private_key"}), name="account-private-key"),
    path("accounts/single/balance", AccountViewSet.as_view({"post": "balance"}), name="account-balance"),
    path("accounts/single/tenant-info", AccountViewSet.as_view({"post": "tenant_info"}), name="account-tenant-info"),
    path("accounts/bulk/<str:detail_level>", AccountViewSet.as_view({"post": "bulk"}), name="accounts-bulk"),
    path("accounts/inactivate", AccountViewSet.as_view({"patch": "inactivate"}), name="account-inactivate"),
    # Durable nonce accounts are accounts of type NONCE (spec: the specialized endpoint for NONCE).
    path("durable-nonce-accounts", DurableNonceAccountViewSet.as_view({"post": "create"}), name="durable-nonce-accounts"),
    path("durable-nonce-accounts/single", DurableNonceAccountViewSet.as_view({"post": "details"}), name="durable-nonce-account-details"),
    path("durable-nonce-accounts/bulk/<str:detail_level>", DurableNonceAccountViewSet.as_view({"post": "bulk"}), name="durable-nonce-accounts-bulk"),
]

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
