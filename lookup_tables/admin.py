"""Back-office for lookup tables: read-only; they change through the API."""

from django.contrib import admin

from .models import AddressLookupTable


@admin.register(AddressLookupTable)
class AddressLookupTableAdmin(admin.ModelAdmin):
    """Tenants' lookup tables (docs/lookup-tables.md): read-only; they change through the API."""

    list_display = ("created_at", "address", "state", "addresses_count", "tenant", "cluster", "authority", "last_extended_slot")
    list_filter = ("state", "cluster", "tenant")
    search_fields = ("address", "offchain_id", "authority")
    list_select_related = ("tenant",)
    readonly_fields = [f.name for f in AddressLookupTable._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
