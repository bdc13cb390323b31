from django.urls import path

from .views import VaultViewSet

BASE = "platform-programs/loan-remittance"

urlpatterns = [
    path(f"{BASE}/create-vault", VaultViewSet.as_view({"post": "create_vault"}), name="vault-create"),
    path(f"{BASE}/update-whitelist", VaultViewSet.as_view({"post": "update_whitelist"}), name="vault-update-whitelist"),
    path(f"{BASE}/repayment", VaultViewSet.as_view({"post": "repayment"}), name="vault-repayment"),
    path(f"{BASE}/close-vault", VaultViewSet.as_view({"post": "close_vault"}), name="vault-close"),
    path(f"{BASE}/vault-details", VaultViewSet.as_view({"post": "vault_details"}), name="vault-details"),
]
