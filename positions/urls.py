from django.urls import path

from .views import PositionViewSet

urlpatterns = [
    path("positions", PositionViewSet.as_view({"post": "initialize", "patch": "update"}), name="positions"),
    path("positions/single", PositionViewSet.as_view({"post": "details"}), name="position-details"),
    path("positions/single/balance", PositionViewSet.as_view({"post": "balance"}), name="position-balance"),
    path("positions/transfer-network-currency", PositionViewSet.as_view({"post": "transfer_network_currency"}), name="position-transfer-network-currency"),
    path("positions/inactivate", PositionViewSet.as_view({"patch": "inactivate"}), name="position-inactivate"),
    path("positions/freeze", PositionViewSet.as_view({"patch": "freeze"}), name="position-freeze"),
    path("positions/unfreeze", PositionViewSet.as_view({"patch": "unfreeze"}), name="position-unfreeze"),
    path("positions/bulk/<str:detail_level>", PositionViewSet.as_view({"post": "bulk"}), name="positions-bulk"),
]

from .views import PositionMovementViewSet  # noqa: E402  (movement endpoints, positions/movement.py)

urlpatterns += [
    path("positions/mint", PositionMovementViewSet.as_view({"post": "mint"}), name="position-mint"),
    path("positions/burn", PositionMovementViewSet.as_view({"post": "burn"}), name="position-burn"),
    path("positions/transfer", PositionMovementViewSet.as_view({"post": "transfer"}), name="position-transfer"),
    path("positions/trade", PositionMovementViewSet.as_view({"post": "trade"}), name="position-trade"),
]

from .views import PositionBatchViewSet  # noqa: E402  (batch payouts, positions/batches.py)

urlpatterns += [
    path("positions/transfer/batch", PositionBatchViewSet.as_view({"post": "transfer"}), name="position-transfer-batch"),
    path("positions/transfer-network-currency/batch", PositionBatchViewSet.as_view({"post": "transfer_network_currency"}), name="position-transfer-network-currency-batch"),
    path("positions/batches/single", PositionBatchViewSet.as_view({"post": "details"}), name="position-batch-details"),
]
