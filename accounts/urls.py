from django.urls import path

from .views import AccountViewSet

urlpatterns = [
    path("accounts", AccountViewSet.as_view({"post": "create", "patch": "update"}), name="accounts"),
    path("accounts/single", AccountViewSet.as_view({"post": "details"}), name="account-details"),
    path("accounts/single/private-key", AccountViewSet.as_view({"post": "private_key"}), name="account-private-key"),
    path("accounts/single/balance", AccountViewSet.as_view({"post": "balance"}), name="account-balance"),
    path("accounts/single/tenant-info", AccountViewSet.as_view({"post": "tenant_info"}), name="account-tenant-info"),
    path("accounts/bulk/<str:detail_level>", AccountViewSet.as_view({"post": "bulk"}), name="accounts-bulk"),
    path("accounts/inactivate", AccountViewSet.as_view({"patch": "inactivate"}), name="account-inactivate"),
]
