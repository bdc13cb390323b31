"""Back-office for positions: listed, searched and filtered; every field read-only (the
chain's, or changed through the API with its role checks); freeze and unfreeze are
actions that call the same service as the API, recorded on the transaction with the
staff user who asked."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from ledger_project.staff import staff_action
from tenancy.context import OperationContext

from .lifecycle import position_set_frozen
from .models import Position, PositionBalanceSnapshot
from .values import display


class BalanceHistoryInline(admin.TabularInline):
    model = PositionBalanceSnapshot
    extra = 0
    can_delete = False
    fields = ("at", "amount", "transaction", "slot")
    readonly_fields = fields
    ordering = ("-at",)
    max_num = 0


@admin.register(Position)
class PositionAdmin(admin.ModelAdmin):
    list_display = ("address", "owner_address", "instrument_label", "status", "frozen", "balance", "associated", "tenant", "cluster", "created_at")
    list_filter = ("status", "frozen", "associated", "instrument__version", "cluster", "tenant")
    search_fields = ("address", "offchain_id", "owner_address", "owner__al_id", "owner__code", "account__al_id", "account__code", "instrument__al_id", "instrument__symbol")
    list_select_related = ("tenant", "instrument", "account")
    fields = (
        "offchain_id", "tenant", "cluster", "address", "account", "owner", "owner_address", "instrument", "associated", "status", "frozen",
        "balance", "delegate_address", "delegated_amount", "was_onchain_already", "token_debit_limits", "token_debit_api_keys",
        "creation_transaction", "last_transaction", "pending_transaction", "last_transaction_at", "created_at", "updated_at",
    )
    readonly_fields = fields
    inlines = [BalanceHistoryInline]
    actions = ["freeze", "unfreeze"]

    def has_add_permission(self, request):
        return False  # positions are initialized through the API (a network transaction)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="instrument", ordering="instrument__al_id")
    def instrument_label(self, position):
        return f"{position.instrument.al_id} {position.instrument.symbol}".strip()

    @admin.display(description="balance (offchain)", ordering="account__token_balance")
    def balance(self, position):
        return display(position.account.token_balance or 0, position.instrument)

    def _set_frozen(self, request, queryset, frozen: bool) -> None:
        done, refused = 0, []
        for position in queryset.select_related("tenant"):
            try:
                position_set_frozen(OperationContext.system(tenant=position.tenant, cluster=position.cluster), position=position, frozen=frozen, requested_by=request.user.get_username())
                done += 1
            except (LedgerError, ChainError) as exc:
                refused.append(f"{position.address}: {exc.message}")
        verb = "freeze" if frozen else "unfreeze"
        self.message_user(request, f"{done} position(s): {verb} transaction recorded (the state changes once it is confirmed).", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    def has_freeze_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.freeze_position")

    @staff_action(description="Freeze positions", permissions=["freeze"], confirm_note="FreezeAccount of each token account, signed by the mint's freeze authority.")
    def freeze(self, request, queryset):
        self._set_frozen(request, queryset, True)

    @staff_action(description="Unfreeze positions", permissions=["freeze"], confirm_note="ThawAccount of each token account, signed by the mint's freeze authority.")
    def unfreeze(self, request, queryset):
        self._set_frozen(request, queryset, False)
