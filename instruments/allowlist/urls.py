from django.urls import path

from .views import AllowListViewSet as V

urlpatterns = [
    path("financial-instruments/allow-list", V.as_view({"post": "initialize"}), name="instrument-allow-list"),
    path("financial-instruments/allow-list/add", V.as_view({"patch": "add"}), name="instrument-allow-list-add"),
    path("financial-instruments/allow-list/remove", V.as_view({"patch": "remove"}), name="instrument-allow-list-remove"),
    path("financial-instruments/allow-list/single", V.as_view({"post": "details"}), name="instrument-allow-list-details"),
]
