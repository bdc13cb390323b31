from django.urls import path

from .views import PositionViewSet

urlpatterns = [
    path("positions", PositionViewSet.as_view({"post": "initialize"}), name="positions"),
    path("positions/single", PositionViewSet.as_view({"post": "details"}), name="position-details"),
]

from .views import PositionMovementViewSet  # noqa: E402  (movement endpoints, positions/movement.py)

urlpatterns += [
    path("positions/mint", PositionMovementViewSet.as_view({"post": "mint"}), name="position-mint"),
    path("positions/burn", PositionMovementViewSet.as_view({"post": "burn"}), name="position-burn"),
    path("positions/transfer", PositionMovementViewSet.as_view({"post": "transfer"}), name="position-transfer"),
    path("positions/trade", PositionMovementViewSet.as_view({"post": "trade"}), name="position-trade"),
]
