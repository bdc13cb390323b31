"""Back-office for the transaction engine: follow, release held transactions, and approve
or reject those held for approval (debit limits) — through the same services as the API,
audited the same way (TransactionApproval names the staff user)."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from ledger_project.api.idempotency import write_phase

from . import approvals, services
from .models import NonceAccount, PlatformFeePayer, Transaction, TransactionApproval, TransactionEvent


class EventInline(admin.TabularInline):
    model = TransactionEvent
    extra = 0
    can_delete = False
    fields = ("at", "kind", "detail")
    readonly_fields = fields
    max_num = 0


class ApprovalInline(admin.TabularInline):
    model = TransactionApproval
    extra = 0
    can_delete = False
    fields = ("at", "decision", "api_key", "staff_user", "reason", "request_id")
    readonly_fields = fields
    max_num = 0


@admin.register(Transaction)
class TransactionAdmin(admin.ModelAdmin):
    list_display = ("txn_timestamp", "operation", "status", "approval_required", "onchain_id", "tenant", "cluster", "confirmations_count")
    list_filter = ("status", "approval_required", "operation", "cluster", "tenant")
    search_fields = ("onchain_id", "offchain_id", "fee_payer")
    list_select_related = ("tenant",)
    exclude = ("message",)
    readonly_fields = [f.name for f in Transaction._meta.fields if f.name != "message"]
    inlines = [ApprovalInline, EventInline]
    actions = ["approve_held", "reject_held", "submit_held", "cancel_unsubmitted"]

    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm("transactions.approve_transaction")

    def _decide(self, request, queryset, decide, verb: str) -> None:
        done, refused = 0, []
        for tx in queryset:
            try:
                decide(tx)
                done += 1
            except LedgerError as exc:
                refused.append(f"{tx.offchain_id}: {exc.message}")
        self.message_user(request, f"{done} transaction(s) {verb}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @admin.action(description="Approve (held for approval: released for submission)", permissions=["approve"])
    def approve_held(self, request, queryset):
        def approve(tx):
            approvals.transaction_approval_check(transaction=tx, staff_user=request.user)
            with write_phase():
                approvals.transaction_approve(transaction=tx, staff_user=request.user, reason=f"Approved in the admin by {request.user}.")

        self._decide(request, queryset, approve, "approved")

    @admin.action(description="Reject (held for approval: cancelled, nothing executed)", permissions=["approve"])
    def reject_held(self, request, queryset):
        self._decide(request, queryset, lambda tx: approvals.transaction_reject(transaction=tx, staff_user=request.user, reason=f"Rejected in the admin by {request.user}."), "rejected")

    def has_add_permission(self, request):
        return False

    @admin.action(description="Submit held (SIGNED, not submitted) transactions")
    def submit_held(self, request, queryset):
        done = 0
        for tx in queryset.filter(status="SIGNED", submit_when_signed=False):
            services.transaction_release(transaction=tx)
            done += 1
        self.message_user(request, f"{done} transaction(s) queued for submission.", messages.SUCCESS)


    @admin.action(description="Cancel (not yet submitted: PARTIALLY_SIGNED, held SIGNED; held for approval: use Reject)")
    def cancel_unsubmitted(self, request, queryset):
        done, refused = 0, []
        for tx in queryset:
            if tx.approval_required:  # a decision on it is audited: Reject records who and why
                refused.append(f"{tx.offchain_id}: held for approval; reject it instead (the decision is recorded).")
                continue
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


@admin.register(TransactionApproval)
class TransactionApprovalAdmin(admin.ModelAdmin):
    """The audit trail of approvals and rejections: read-only."""

    list_display = ("at", "decision", "transaction", "api_key", "staff_user", "reason")
    list_filter = ("decision",)
    search_fields = ("transaction__onchain_id", "transaction__offchain_id", "api_key__key_id", "reason")
    list_select_related = ("transaction", "api_key", "staff_user")
    readonly_fields = ("at", "decision", "transaction", "api_key", "staff_user", "reason", "request_id")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


from . import webhook_admin  # noqa: E402,F401  (webhook subscriptions, events, attempts)
