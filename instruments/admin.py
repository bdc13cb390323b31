"""Back-office for financial instruments: offchain data editable, chain fields read-only.
Pause and unpause are actions through the same service as ``PATCH
/api/v1/financial-instruments/pause|unpause`` (``changes.instrument_set_paused``: a
Token-2022 Pause/Resume signed by the mint's pausable authority, held in custody),
recorded with the staff user; re-reading from the network is ``services.instrument_sync``."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from ledger_project.staff import staff_action
from tenancy.context import OperationContext

from .allowlist.admin_view import allow_list_html, has_allow_list
from .models import AUTHORITY_ROLES, AlIdSequence, FinancialInstrument, authority_column
from .changes import instrument_set_paused
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
        "creation_transaction", "creation_transaction_at", "last_transaction", "last_transaction_at", *_AUTHORITY_FIELDS, "allow_list",
    )
    actions = ["pause", "unpause", "sync_from_chain"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if has_allow_list(obj):  # the allow-list hook: its list as the chain has it now
            fieldsets = (*fieldsets, ("Allow-list (on chain, read-only)", {"fields": ("allow_list",)}))
        return fieldsets

    @admin.display(description="Allow-list")
    def allow_list(self, obj):
        return allow_list_html(obj)

    def has_add_permission(self, request):
        return False  # instruments are created through the API (keys, chain transactions)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_pause_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.pause_instrument")

    def has_sync_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.sync_instrument")

    def _set_paused(self, request, queryset, paused: bool) -> None:
        done, refused = 0, []
        for instrument in queryset.select_related("tenant"):
            try:
                instrument_set_paused(OperationContext.system(tenant=instrument.tenant, cluster=instrument.cluster), instrument=instrument, paused=paused,
                                      requested_by=request.user.get_username())
                done += 1
            except (LedgerError, ChainError) as exc:
                refused.append(f"{instrument.al_id or instrument.address}: {exc.message}")
        verb = "pause" if paused else "unpause"
        self.message_user(request, f"{done} instrument(s): {verb} transaction recorded (the state changes once it is confirmed).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @staff_action(description="Pause financial instruments", permissions=["pause"],
                  confirm_note="A Token-2022 Pause instruction signed by each mint's pausable authority: while paused, the token program refuses transfers, mints and burns.")
    def pause(self, request, queryset):
        self._set_paused(request, queryset, True)

    @staff_action(description="Unpause financial instruments", permissions=["pause"],
                  confirm_note="A Token-2022 Resume instruction signed by each mint's pausable authority.")
    def unpause(self, request, queryset):
        self._set_paused(request, queryset, False)

    @staff_action(description="Re-read from the network", permissions=["sync"], confirm_note="Each mint is read from its cluster and its record updated to what the chain says.")
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
