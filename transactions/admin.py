"""Back-office for the transaction engine: follow, and release held transactions."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError

from . import services
from .models import NonceAccount, PlatformFeePayer, Transaction, TransactionEvent


class EventInline(admin.TabularInline):
    model = TransactionEvent
    extra = 0
    can_delete = False
    fields = ("at", "kind", "detail")
    readonly_fields = fields
    max_num = 0


@admin.register(Transaction)
class TransactionAdmin(admin.ModelAdmin):
    list_display = ("txn_timestamp", "operation", "status", "onchain_id", "tenant", "cluster", "confirmations_count")
    list_filter = ("status", "operation", "cluster", "tenant")
    search_fields = ("onchain_id", "offchain_id", "fee_payer")
    list_select_related = ("tenant",)
    exclude = ("message",)
    readonly_fields = [f.name for f in Transaction._meta.fields if f.name != "message"]
    inlines = [EventInline]
    actions = ["submit_held", "cancel_unsubmitted"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Submit held (SIGNED, not submitted) transactions")
    def submit_held(self, request, queryset):
        done = 0
        for tx in queryset.filter(status="SIGNED", submit_when_signed=False):
            services.transaction_release(transaction=tx)
            done += 1
        self.message_user(request, f"{done} transaction(s) queued for submission.", messages.SUCCESS)


    @admin.action(description="Cancel (not yet submitted: PENDING_APPROVAL, PARTIALLY_SIGNED, held SIGNED)")
    def cancel_unsubmitted(self, request, queryset):
        done, refused = 0, []
        for tx in queryset:
            try:
                services.transaction_cancel(transaction=tx, reason=f"Cancelled in the admin by {request.user}.")
                done += 1
            except LedgerError as exc:
                refused.append(f"{tx.offchain_id}: {exc.message}")
        self.message_user(request, f"{done} transaction(s) cancelled.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)


@admin.register(PlatformFeePayer)
class PlatformFeePayerAdmin(admin.ModelAdmin):
    list_display = ("cluster", "managed_key", "created_at")
    readonly_fields = ("cluster", "managed_key", "created_at")


@admin.register(NonceAccount)
class NonceAccountAdmin(admin.ModelAdmin):
    list_display = ("address", "cluster", "state", "leased_by", "leased_at", "created_at", "closed_at")
    list_filter = ("cluster", "state")
    readonly_fields = ("address", "cluster", "state", "account_key", "authority_key", "leased_by", "leased_at", "created_at", "closed_at")
