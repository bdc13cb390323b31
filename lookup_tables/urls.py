from django.urls import path

from .views import AddressLookupTableViewSet

urlpatterns = [
    path("address-lookup-tables", AddressLookupTableViewSet.as_view({"post": "create", "patch": "update"}), name="address-lookup-tables"),
    path("address-lookup-tables/extend", AddressLookupTableViewSet.as_view({"patch": "extend"}), name="address-lookup-table-extend"),
    path("address-lookup-tables/single", AddressLookupTableViewSet.as_view({"post": "details"}), name="address-lookup-table-details"),
    path("address-lookup-tables/bulk/<str:detail_level>", AddressLookupTableViewSet.as_view({"post": "bulk"}), name="address-lookup-tables-bulk"),
]
