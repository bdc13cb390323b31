from django.urls import path

from .views import OnchainDataSourceViewSet

BASE = "market-data/onchain-data-source"

urlpatterns = [
    path(BASE, OnchainDataSourceViewSet.as_view({"post": "create", "patch": "update"}), name="onchain-data-source"),
    path(f"{BASE}/refresh", OnchainDataSourceViewSet.as_view({"patch": "refresh"}), name="onchain-data-source-refresh"),
    path(f"{BASE}/single", OnchainDataSourceViewSet.as_view({"post": "details"}), name="onchain-data-source-details"),
    path(f"{BASE}/bulk/<str:detail_level>", OnchainDataSourceViewSet.as_view({"post": "bulk"}), name="onchain-data-sources-bulk"),
]
