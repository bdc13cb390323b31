from django.urls import path

from .views import PositionViewSet

urlpatterns = [
    path("positions", PositionViewSet.as_view({"post": "initialize"}), name="positions"),
    path("positions/single", PositionViewSet.as_view({"post": "details"}), name="position-details"),
    path("positions/transfer-network-currency", PositionViewSet.as_view({"post": "transfer_network_currency"}), name="position-transfer-network-currency"),
]
