from django.urls import path

from .views import WebhookViewSet

# docs/webhooks.md
urlpatterns = [
    path("webhooks", WebhookViewSet.as_view({"post": "create", "patch": "update"}), name="webhooks"),
    path("webhooks/single", WebhookViewSet.as_view({"post": "details"}), name="webhook-details"),
    path("webhooks/single/signing-secret", WebhookViewSet.as_view({"post": "signing_secret"}), name="webhook-signing-secret"),
    path("webhooks/bulk/<str:detail_level>", WebhookViewSet.as_view({"post": "bulk"}), name="webhooks-bulk"),
    path("webhooks/replay", WebhookViewSet.as_view({"post": "replay"}), name="webhook-replay"),
]
