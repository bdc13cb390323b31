from django.urls import path

from .views import FinancialInstrumentViewSet as V

urlpatterns = [
    path("financial-instruments", V.as_view({"post": "create", "patch": "update"}), name="instruments"),
    path("financial-instruments/single", V.as_view({"post": "details"}), name="instrument-details"),
    path("financial-instruments/single/circulating-supply", V.as_view({"post": "circulating_supply"}), name="instrument-circulating-supply"),
    path("financial-instruments/bulk/<str:detail_level>", V.as_view({"post": "bulk"}), name="instruments-bulk"),
    path("financial-instruments/pause", V.as_view({"patch": "pause"}), name="instrument-pause"),
    path("financial-instruments/unpause", V.as_view({"patch": "unpause"}), name="instrument-unpause"),
    path("financial-instruments/close", V.as_view({"patch": "close"}), name="instrument-close"),
    path("financial-instruments/token-extensions-calculator", V.as_view({"post": "calculator"}), name="instrument-calculator"),
]

# Allow-lists of allow-list transfer-hook instruments (instruments/allowlist/, docs/instruments.md).
from .allowlist.urls import urlpatterns as _allow_list  # noqa: E402

urlpatterns += _allow_list
