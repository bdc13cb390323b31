from django.urls import path

from .views import TransactionViewSet
from .webhook_views import WebhookViewSet

urlpatterns = [
    path("transactions/single/status", TransactionViewSet.as_view({"post": "status"}), name="transaction-status"),
    path("transactions/approve", TransactionViewSet.as_view({"patch": "approve"}), name="transaction-approve"),
    path("transactions/reject", TransactionViewSet.as_view({"patch": "reject"}), name="transaction-reject"),
    path("transactions/sign", TransactionViewSet.as_view({"patch": "sign"}), name="transaction-sign"),
    path("transactions/submit", TransactionViewSet.as_view({"patch": "submit"}), name="transaction-submit"),
    path("transactions/withdraw", TransactionViewSet.as_view({"patch": "withdraw"}), name="transaction-withdraw"),
    path("transactions/single", TransactionViewSet.as_view({"post": "details"}), name="transaction-details"),
    path("transactions/bulk/<str:detail_level>", TransactionViewSet.as_view({"post": "bulk"}), name="transactions-bulk"),
    # Webhooks (docs/webhooks.md)
    path("webhooks", WebhookViewSet.as_view({"post": "create", "patch": "update"}), name="webhooks"),
    path("webhooks/single", WebhookViewSet.as_view({"post": "details"}), name="webhook-details"),
    path("webhooks/single/signing-secret", WebhookViewSet.as_view({"post": "signing_secret"}), name="webhook-signing-secret"),
    path("webhooks/bulk/<str:detail_level>", WebhookViewSet.as_view({"post": "bulk"}), name="webhooks-bulk"),
    path("webhooks/replay", WebhookViewSet.as_view({"post": "replay"}), name="webhook-replay"),
]
