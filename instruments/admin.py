"""Back-office for financial instruments: offchain data editable, chain fields read-only."""

from django.contrib import admin, messages

from .models import AUTHORITY_ROLES, AlIdSequence, FinancialInstrument, authority_column
from .services import instrument_sync

_AUTHORITY_FIELDS = tuple(f"{authority_column(role)}_address" for role in AUTHORITY_ROLES)


@admin.register(FinancialInstrument)
class FinancialInstrumentAdmin(admin.ModelAdmin):
    list_display = ("al_id", "symbol", "name", "version", "status", "paused", "supply_onchain", "decimals", "managed", "tenant", "cluster", "created_at")
    list_filter = ("version", "status", "paused", "managed", "cluster", "tenant", "al_category")
    search_fields = ("al_id", "address", "symbol", "name", "offchain_id", "mint_authority_address")
    list_select_related = ("tenant",)
    fieldsets = (
        (None, {"fields": ("al_id", "al_category", "al_type", "tenant", "cluster", "address", "version", "status", "managed", "was_onchain_already")}),
        ("Offchain (editable)", {"fields": ("offchain_data", "comments", "shared_across_tenants")}),
        ("Onchain (as last read from the network)", {"fields": (
            "name", "symbol", "uri", "decimals", "onchain_metadata", "extensions", "default_position_state", "paused",
            "scaled_ui_multiplier", "transfer_hook_program_address", "supply_onchain", "supply_offchain", "data_length", "synced_at", "synced_slot",
        )}),
        ("Authorities", {"fields": _AUTHORITY_FIELDS}),
        ("Transactions", {"fields": ("creation_transaction", "creation_transaction_at", "last_transaction", "last_transaction_at")}),
    )
    readonly_fields = (
        "al_id", "al_category", "al_type", "tenant", "cluster", "address", "version", "status", "managed", "was_onchain_already",
        "name", "symbol", "uri", "decimals", "onchain_metadata", "extensions", "default_position_state", "paused",
        "scaled_ui_multiplier", "transfer_hook_program_address", "supply_onchain", "supply_offchain", "data_length", "synced_at", "synced_slot",
        "creation_transaction", "creation_transaction_at", "last_transaction", "last_transaction_at", *_AUTHORITY_FIELDS,
    )
    actions = ["sync_from_chain"]

    def has_add_permission(self, request):
        return False  # instruments are created through the API (keys, chain transactions)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Re-read from the network")
    def sync_from_chain(self, request, queryset):
        for instrument in queryset:
            instrument_sync(instrument=instrument)
        self.message_user(request, f"{queryset.count()} instrument(s) re-read from the network.", messages.INFO)


@admin.register(AlIdSequence)
class AlIdSequenceAdmin(admin.ModelAdmin):
    list_display = ("category", "instrument_type", "last_value")
    readonly_fields = ("category", "instrument_type", "last_value")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
