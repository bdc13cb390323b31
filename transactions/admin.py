"""Back-office for the transaction engine: follow, release held transactions, approve or
reject those held for approval (debit limits), resubmit or reconcile stuck ones, cancel
unsubmitted ones — through the same services as the API and the worker (approvals,
``collecting.transaction_release`` / ``ending.transaction_cancel``, ``staff.transaction_resubmit``
/ ``transaction_reconcile``), audited the same way (TransactionApproval names the staff
user). Submit, resubmit and reconcile need ``backoffice.submit_transaction``, cancel
``backoffice.cancel_transaction`` (the operator's), approve and reject
``transactions.approve_transaction`` (the approver's). The page shows the message decoded
as Fetch Transaction Details answers (templates/admin/transactions/transaction/)."""

from datetime import timedelta

from django.contrib import admin, messages
from django.utils import timezone

from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from tenancy.idempotency import write_phase
from ledger_project.staff import ReadOnlyAdmin, staff_action

from . import approvals, collecting, ending, staff
from .models import TERMINAL, NonceAccount, PlatformFeePayer, Transaction, TransactionApproval, TransactionEvent, TransactionStatus


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


class SignerFilter(admin.SimpleListFilter):
    """Transactions an address signs (``?signer=<address>``: an account page links here),
    read through TransactionSigner's (address, transaction) index."""

    title = "signer"
    parameter_name = "signer"

    def lookups(self, request, model_admin):
        value = self.value()
        return [(value, value)] if value else []

    def queryset(self, request, queryset):
        return queryset.filter(signer_rows__address=self.value()) if self.value() else queryset


class StuckFilter(admin.SimpleListFilter):
    """Not final, and not looked at by the engine for a while (``updated_at``: the pump
    touches what it follows, reconciliation what it holds): candidates for Resubmit or
    Reconcile."""

    title = "stuck (not looked at for)"
    parameter_name = "stuck"
    CHOICES = (("60", "over 1 minute"), ("600", "over 10 minutes"), ("3600", "over 1 hour"))

    def lookups(self, request, model_admin):
        return self.CHOICES

    #: at most this many, the longest untouched first (more is an outage: the dashboard counts them)
    LIMIT = 1000

    def queryset(self, request, queryset):
        if self.value() not in dict(self.CHOICES):
            return queryset
        not_final = [s for s in TransactionStatus.values if s not in TERMINAL]
        # Read off the status index first: the list's newest-first order would otherwise
        # walk the primary key past every recently touched transaction. (updated_at has no
        # index on purpose: the pump rewrites it all the time, and an index on it would
        # cost every such update its HOT path.)
        ids = queryset.filter(status__in=not_final, updated_at__lt=timezone.now() - timedelta(seconds=int(self.value()))).order_by("updated_at")
        return queryset.filter(pk__in=list(ids.values_list("pk", flat=True)[:self.LIMIT]))


def _label(tx: Transaction) -> str:
    return tx.onchain_id or str(tx.offchain_id)


#: shown on the page in this order; the message is decoded below them, never shown raw,
#: and signatures are shown there (withheld while held for approval)
_FIELDSETS = (
    (None, ("offchain_id", "tenant", "cluster", "operation", "status", "error_message", "approval_required", "submit_when_signed", "created_by_key", "request_id")),
    ("Times", ("txn_timestamp", "withdrawn_at", "submitted_at", "confirmed_at", "finalized_at", "effects_applied_at", "submit_attempts", "updated_at")),
    ("On the chain", ("onchain_id", "version", "lifetime", "blockhash", "last_valid_block_height", "nonce_account", "fee_payer", "commitment",
                      "slot", "confirmations_count", "block_time", "fee", "compute_units_consumed")),
    ("Recorded data", ("effects", "error", "loaded_addresses")),
)


@admin.register(Transaction)
class TransactionAdmin(admin.ModelAdmin):
    list_display = ("txn_timestamp", "operation", "status", "approval_required", "onchain_id", "tenant", "cluster", "confirmations_count", "submit_attempts")
    list_filter = ("status", StuckFilter, "approval_required", "operation", "cluster", "tenant", SignerFilter)
    search_fields = ("onchain_id", "offchain_id", "fee_payer")
    list_select_related = ("tenant",)
    fieldsets = [(name, {"fields": fields}) for name, fields in _FIELDSETS]
    readonly_fields = [f.name for f in Transaction._meta.fields if f.name != "message"]
    inlines = [ApprovalInline, EventInline]
    actions = ["approve_held", "reject_held", "submit_held", "resubmit", "reconcile", "cancel_unsubmitted"]

    def has_add_permission(self, request):
        return False

    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm("transactions.approve_transaction")

    def has_submit_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.submit_transaction")

    def has_cancel_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.cancel_transaction")

    def _each(self, request, queryset, run, verb: str) -> None:
        """``run(tx)`` for each selected transaction; a LedgerError (the service's refusal,
        or a cluster that does not answer) is reported for that one, the others go on."""
        done, refused = 0, []
        for tx in queryset.order_by("pk"):
            try:
                note = run(tx)
                done += 1
                if note:
                    self.message_user(request, f"{_label(tx)}: {note}", messages.INFO)
            except (LedgerError, ChainError) as exc:
                refused.append(f"{_label(tx)}: {exc.message}")
        self.message_user(request, f"{done} transaction(s) {verb}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @staff_action(description="Approve (held for approval: released for submission)", permissions=["approve"],
                  confirm_note="Each transaction is released for submission (PATCH transactions/approve); the decision is recorded with your name.")
    def approve_held(self, request, queryset):
        def approve(tx):
            approvals.transaction_approval_check(transaction=tx, staff_user=request.user)
            with write_phase():
                approvals.transaction_approve(transaction=tx, staff_user=request.user, reason=f"Approved in the admin by {request.user}.")

        self._each(request, queryset, approve, "approved")

    @staff_action(description="Reject (held for approval: cancelled, nothing executed)", permissions=["approve"],
                  confirm_note="Each transaction is cancelled (PATCH transactions/reject): nothing is executed; the decision is recorded with your name.")
    def reject_held(self, request, queryset):
        self._each(request, queryset, lambda tx: approvals.transaction_reject(transaction=tx, staff_user=request.user, reason=f"Rejected in the admin by {request.user}."), "rejected")

    @staff_action(description="Submit held (SIGNED, not submitted) transactions", permissions=["submit"],
                  confirm_note="Each held SIGNED transaction is queued for the cluster's pump (Submit Transaction's service, transaction_release).")
    def submit_held(self, request, queryset):
        def release(tx):
            collecting.transaction_release(transaction=tx)

        self._each(request, queryset, release, "queued for submission")

    @staff_action(description="Resubmit stuck transactions (send the same signed bytes now)", permissions=["submit"],
                  confirm_note="SIGNED and queued: claimed and sent now, as the pump sends. SUBMITTED: looked up by signature, and sent again "
                               "(the same signed bytes: it executes at most once) unless the cluster has it; EXPIRED if its lifetime is over. "
                               "Nothing is ever signed again.")
    def resubmit(self, request, queryset):
        self._each(request, queryset, lambda tx: _outcome(staff.transaction_resubmit(transaction_id=tx.pk)), "resubmitted")

    @staff_action(description="Reconcile with the cluster (what the pump and reconciliation do next)", permissions=["submit"],
                  confirm_note="SUBMITTED / CONFIRMED: followed by signature (confirmed, finalized or failed, effects applied once). Held: expired "
                               "once its lifetime is over, or followed if it landed anyway. SIGNED and queued: its cluster's pump is started. "
                               "Landed without the chain's record: the record (fee, logs) is read.")
    def reconcile(self, request, queryset):
        self._each(request, queryset, lambda tx: _outcome(staff.transaction_reconcile(transaction_id=tx.pk)), "reconciled")

    @staff_action(description="Cancel (not yet submitted: PARTIALLY_SIGNED, held SIGNED; held for approval: use Reject)", permissions=["cancel"],
                  confirm_note="Each transaction becomes CANCELLED and can never execute (a durable nonce is advanced first); its operation's "
                               "failure effects run (transaction_cancel).")
    def cancel_unsubmitted(self, request, queryset):
        def cancel(tx):
            if tx.approval_required:  # a decision on it is audited: Reject records who and why
                raise LedgerError("held for approval; reject it instead (the decision is recorded).")
            ending.transaction_cancel(transaction=tx, reason=f"Cancelled in the admin by {request.user}.")

        self._each(request, queryset, cancel, "cancelled")


def _outcome(outcome: staff.StaffOutcome) -> str:
    return f"{outcome.before} → {outcome.after} ({outcome.done})"


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
class TransactionApprovalAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    """The audit trail of approvals and rejections: read-only."""

    list_display = ("at", "decision", "transaction", "api_key", "staff_user", "reason")
    list_filter = ("decision",)
    search_fields = ("transaction__onchain_id", "transaction__offchain_id", "api_key__key_id", "reason")
    list_select_related = ("transaction", "api_key", "staff_user")
    readonly_fields = ("at", "decision", "transaction", "api_key", "staff_user", "reason", "request_id")


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
from . import admin_fees  # noqa: E402, F401  (the Platform-paid fees page)
