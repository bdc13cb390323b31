"""Back-office for the transaction engine: follow, release held transactions, and approve
or reject those held for approval (debit limits) — through the same services as the API,
audited the same way (TransactionApproval names the staff user)."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from ledger_project.api.idempotency import write_phase

from . import approvals, services
from .models import AddressLookupTable, NonceAccount, PlatformFeePayer, Transaction, TransactionApproval, TransactionEvent


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
    readonly_fields = [f.name for f in Transaction._meta.fields if f.name != "message"] + ["signers_collected", "decoded_instructions"]
    inlines = [ApprovalInline, EventInline]
    actions = ["approve_held", "reject_held", "submit_held", "cancel_unsubmitted"]

    @admin.display(description="Signers (signature collected?)")
    def signers_collected(self, obj) -> str:
        from django.utils.html import format_html_join

        signed = obj.signatures or {}
        return format_html_join("", "<div><code>{}</code> — {}</div>", ((s, "signed" if s in signed else "missing") for s in obj.required_signers or ()))

    @admin.display(description="Decoded instructions")
    def decoded_instructions(self, obj) -> str:
        """The message decoded as Fetch Transaction Details shows it (chain/decode.py)."""
        import json

        from django.utils.html import format_html

        from .chain.decode import decode_message

        if not obj.message:
            return "-"
        decoded = decode_message(bytes(obj.message), obj.loaded_addresses)
        lines = []
        for ix in decoded["instructions"]:
            accounts = ", ".join(f"{a['role'] or '?'}={a['onchainId']}" for a in ix["accounts"])
            data = json.dumps(ix["data"]) if ix["data"] is not None else f"raw {ix['rawData']}"
            lines.append(f"#{ix['index']} {ix['programName'] or ix['programId']}.{ix['instructionType'] or '?'} {data}\n    {accounts}")
        return format_html("<pre style=\"white-space: pre-wrap\">{}</pre>", "\n".join(lines))

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


class NonceOwnerFilter(admin.SimpleListFilter):
    title = "owner"
    parameter_name = "owner"

    def lookups(self, request, model_admin):
        return [("pool", "Platform pool"), ("tenant", "Tenants")]

    def queryset(self, request, queryset):
        if self.value() in ("pool", "tenant"):
            return queryset.filter(tenant__isnull=self.value() == "pool")
        return queryset


@admin.register(NonceAccount)
class NonceAccountAdmin(admin.ModelAdmin):
    """The platform's pool and tenants' own nonce accounts (tenant empty: the pool), with
    their leases. Read-only: the pool task and the engine own their states."""

    list_display = ("address", "cluster", "tenant", "state", "authority", "leased_by", "leased_at", "created_at", "closed_at")
    list_filter = (NonceOwnerFilter, "cluster", "state", "tenant")
    search_fields = ("address", "authority", "account__offchain_id", "leased_by__offchain_id", "leased_by__onchain_id")
    list_select_related = ("tenant", "leased_by")
    readonly_fields = ("address", "cluster", "tenant", "account", "state", "account_key", "authority", "authority_key", "authority_account", "leased_by", "leased_at", "created_at", "closed_at")

    def has_add_permission(self, request):
        return False


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


from .models import ProgramDeployment  # noqa: E402  (the project's programs per cluster, transactions/program_deploy.py)


@admin.register(ProgramDeployment)
class ProgramDeploymentAdmin(admin.ModelAdmin):
    """What ``deploy_programs`` deployed where (read-only: deploy and upgrade with the command;
    keys are never shown, only which key row signs)."""

    list_display = ("name", "cluster", "program_id", "state", "size", "sha256", "deployed_slot", "updated_at")
    list_filter = ("cluster", "name", "state")
    search_fields = ("program_id", "sha256")
    readonly_fields = ("cluster", "name", "program_id", "program_key", "upgrade_authority_key", "state", "sha256", "size", "max_data_len", "deployed_slot", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


from . import webhook_admin  # noqa: E402,F401  (webhook subscriptions, events, attempts)
