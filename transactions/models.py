"""Network transactions the service builds, signs, submits and follows (docs/transactions.md)."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q

from tenancy.models import TenantOrganization
from tenancy.scoping import TenantOwnedModel


class TransactionStatus(models.TextChoices):
    # Spec names PARTIALLY_SIGNED and SIGNED; the rest of the lifecycle is ours (docs).
    BUILT = "BUILT"
    PENDING_APPROVAL = "PENDING_APPROVAL"
    PARTIALLY_SIGNED = "PARTIALLY_SIGNED"
    SIGNED = "SIGNED"
    SUBMITTED = "SUBMITTED"
    CONFIRMED = "CONFIRMED"
    FINALIZED = "FINALIZED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"


IN_FLIGHT = (TransactionStatus.SIGNED, TransactionStatus.SUBMITTED)
TERMINAL = (TransactionStatus.FINALIZED, TransactionStatus.FAILED, TransactionStatus.EXPIRED, TransactionStatus.CANCELLED)


class MessageLifetime(models.TextChoices):
    RECENT_BLOCKHASH = "RECENT_BLOCKHASH"
    DURABLE_NONCE = "DURABLE_NONCE"


class TransactionVersion(models.TextChoices):
    LEGACY = "LEGACY"
    V0 = "V0"


class Commitment(models.TextChoices):
    PROCESSED = "processed"
    CONFIRMED = "confirmed"
    FINALIZED = "finalized"


class Transaction(TenantOwnedModel):
    """One network transaction, from built message to final status.

    Invariants: ``message`` never changes once stored (signatures cover it);
    ``onchain_id`` is the fee payer's signature and is unique per cluster; offchain effects
    of the operation are applied once, marked by ``effects_applied_at``; a transaction's
    signed bytes are stored before any node sees them, so a crashed worker can always
    rebroadcast them or learn their fate by signature.
    """

    status = models.CharField(max_length=20, choices=TransactionStatus.choices, default=TransactionStatus.BUILT, db_index=True)
    operation = models.CharField(max_length=60, help_text="The API operation that created it, e.g. accounts.create.")
    effects = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder, help_text="What to apply offchain once confirmed.")
    created_by_key = models.ForeignKey("tenancy.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    request_id = models.UUIDField(null=True, blank=True)

    onchain_id = models.CharField(max_length=100, null=True, blank=True)
    message = models.BinaryField(help_text="Serialized message (versioned form for V0).")
    version = models.CharField(max_length=8, choices=TransactionVersion.choices, default=TransactionVersion.V0)
    lifetime = models.CharField(max_length=20, choices=MessageLifetime.choices, default=MessageLifetime.RECENT_BLOCKHASH)
    blockhash = models.CharField(max_length=50)
    last_valid_block_height = models.BigIntegerField(null=True, blank=True)
    nonce_account = models.CharField(max_length=50, blank=True)
    fee_payer = models.CharField(max_length=50)
    required_signers = models.JSONField(default=list, help_text="Signer addresses in message order.")
    signatures = models.JSONField(default=dict, blank=True, help_text="Signer address → base58 signature.")
    commitment = models.CharField(max_length=10, choices=Commitment.choices, default=Commitment.CONFIRMED)
    submit_when_signed = models.BooleanField(default=True)
    # Recorded over a debit limit: it may not be submitted until approved (PENDING_APPROVAL
    # once every signature is there); cleared by the approval (docs/transactions.md).
    approval_required = models.BooleanField(default=False)
    # Withdrawn by its client while PARTIALLY_SIGNED (Withdraw Transaction): it takes no more
    # signatures and ends CANCELLED once it provably can never execute (docs/transactions.md,
    # "Withdraw Transaction").
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # Signed again with a fresh blockhash when the last one provably died unlanded and the
    # service made every signature (transactions/resign.py; docs/transactions.md, "Re-signing
    # on expiry"): unless the request opted out (svmTransactionConfig.resignOnExpiry false),
    # at most LEDGER_RESIGN_MAX times, then EXPIRED as before.
    resign_on_expiry = models.BooleanField(default=True, help_text="svmTransactionConfig.resignOnExpiry: sign again with a fresh blockhash when the last one expired unlanded.")
    resign_count = models.PositiveSmallIntegerField(default=0, help_text="How many times the service signed it again with a fresh blockhash.")

    confirmations_count = models.IntegerField(null=True, blank=True)
    slot = models.BigIntegerField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    error = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    txn_timestamp = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    finalized_at = models.DateTimeField(null=True, blank=True)
    submit_attempts = models.PositiveIntegerField(default=0)
    effects_applied_at = models.DateTimeField(null=True, blank=True)
    # The chain's record of the landed transaction (getTransaction), stored when it settles
    # from the read its effects already make (settlement._settle), or once on demand for one
    # settled without it (chain_record.transaction_chain_record_fill): details are then served
    # from here, never from the cluster (docs/transactions.md, "Transaction details and history").
    fee = models.BigIntegerField(null=True, blank=True, help_text="Lamports the transaction paid (meta.fee).")
    # The most its fee can be, read from the message (chain.fees.message_fee), and whether the
    # platform's fee payer pays it: an organization's platform-paid fees over 24 hours count
    # this while the transaction may land, ``fee`` once it has (transactions/fees.py).
    max_fee = models.BigIntegerField(null=True, blank=True, help_text="Lamports its fee can be at most (signatures and prioritization fee).")
    platform_paid = models.BooleanField(default=False, help_text="The platform's fee payer pays its fee.")
    compute_units_consumed = models.BigIntegerField(null=True, blank=True)
    log_messages = models.JSONField(null=True, blank=True, help_text="The programs' log lines (meta.logMessages).")
    block_time = models.DateTimeField(null=True, blank=True, help_text="The block's time, as the cluster estimates it.")
    loaded_addresses = models.JSONField(null=True, blank=True, help_text="V0: addresses loaded from lookup tables, {writable, readonly}.")
    # The pump shard's bucket (transactions/pump.py, docs/transactions.md "Shards"): a stable
    # hash of the ordering key, fixed at record time; shard s of N pumps the buckets b with
    # b % N == s, so changing N leaves no row without a shard.
    shard_key = models.PositiveSmallIntegerField(default=0, help_text="Pump shard bucket: a stable hash of the transaction's ordering key.")

    class Meta:
        ordering = ["-txn_timestamp"]
        # The admin's approve/reject actions need it (superusers have it).
        permissions = [("approve_transaction", "Can approve or reject transactions held for approval")]
        indexes = [
            # Fetch Transactions' default order (txnTimestamp DESC, then id DESC) read off the
            # index with no sort; and the tenant's ids for counts that join (the signer filter).
            models.Index(fields=["tenant", "-txn_timestamp", "-id"], name="txn_tenant_time_id"),
            # The pump's claim and follow reads of one shard's buckets (and every status/cluster read).
            models.Index(fields=["status", "cluster", "shard_key"], name="txn_status_cluster_shard"),
            # The dashboard's 24-hour plots read confirmations by time (docs/admin.md). Set once,
            # in the UPDATE that changes the (indexed) status anyway: no HOT update is lost.
            models.Index(fields=["confirmed_at"], name="txn_confirmed_at"),
            # Page totals of operation / status filters, index-only (docs/transactions.md).
            models.Index(fields=["tenant", "operation", "status"], name="txn_tenant_op_status"),
            # One API key's transactions, newest first, and their count (createdByKey).
            models.Index(fields=["tenant", "created_by_key", "-txn_timestamp"], name="txn_tenant_key_time"),
            # An organization's platform-paid fees of the last 24 hours (transactions/fees.py).
            models.Index(fields=["tenant", "cluster", "txn_timestamp"], name="txn_platform_paid_time", condition=Q(platform_paid=True)),
            # The pump's look for unsent SIGNED rows near their blockhash's end (transactions/resign.py,
            # ``resign_unsent``): only rows waiting for their first send are in it.
            models.Index(fields=["cluster", "last_valid_block_height"], name="txn_signed_unsent_lvbh", condition=Q(status="SIGNED", submit_attempts=0)),
        ]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "onchain_id"], condition=Q(onchain_id__isnull=False), name="txn_unique_signature_per_cluster", violation_error_message="A transaction with this signature is already recorded."),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.onchain_id or self.offchain_id} [{self.status}]"

    @property
    def missing_signers(self) -> list[str]:
        return [s for s in self.required_signers if s not in (self.signatures or {})]


class TransactionSigner(models.Model):
    """A required signer of a transaction, one row per signer key of its message (written
    with the Transaction row; the message, hence its signers, never changes). Fetch
    Transactions' ``signer`` filter reads it through the (address, transaction) index: the
    planner has real statistics for it (a signer on every transaction, such as the platform
    fee payer, versus one on a few), which a JSON containment test on
    ``Transaction.required_signers`` would not give it. Reached only through a tenant's
    Transaction queryset."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.CASCADE, related_name="signer_rows")
    address = models.CharField(max_length=50)
    position = models.PositiveSmallIntegerField(help_text="Its index among the message's signers (0: the fee payer).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["transaction", "address"], name="txn_signer_unique")]
        indexes = [models.Index(fields=["address", "transaction"], name="txn_signer_address")]

    def __str__(self) -> str:
        return f"{self.address} signs {self.transaction_id}"


class TransactionEvent(models.Model):
    """Append-only lifecycle log of a transaction (status changes, submissions, effects)."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=30)
    detail = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]
        indexes = [models.Index(fields=["transaction", "kind"], name="txn_event_kind")]


class ApprovalDecision(models.TextChoices):
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class TransactionApproval(models.Model):
    """Audit trail of a decision on a transaction held for approval (debit limits): who
    decided — an API key with PLATFORM_APPROVE_TRANSACTIONS, or a staff user in the admin —
    when, what and why. Written in the same database transaction that moves the
    transaction (released or cancelled), so a decision is recorded exactly when it took
    effect. Append-only."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.PROTECT, related_name="approvals")
    decision = models.CharField(max_length=10, choices=ApprovalDecision.choices)
    reason = models.TextField(blank=True)
    api_key = models.ForeignKey("tenancy.ApiKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    staff_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    request_id = models.CharField(max_length=64, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(api_key__isnull=False, staff_user__isnull=True) | Q(api_key__isnull=True, staff_user__isnull=False),
                name="txn_approval_one_decider", violation_error_message="A decision is made by an API key or by a staff user.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.transaction_id} by {self.api_key_id or self.staff_user_id}"

    @property
    def decided_by(self) -> str:
        return f"API key {self.api_key.key_id}" if self.api_key_id else f"staff user {self.staff_user}"


class PlatformFeePayer(models.Model):
    """The service's own fee payer on a cluster: a managed key (auto-funded on localnet)."""

    cluster = models.CharField(max_length=40, unique=True)
    managed_key = models.ForeignKey("custody.ManagedKey", on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"fee payer of {self.cluster}"


class NonceState(models.TextChoices):
    CREATING = "CREATING"  # row and keys recorded; the creation may or may not have landed
    READY = "READY"  # initialized on chain, available to lease
    CLOSING = "CLOSING"  # taken out of the pool to be closed; the withdraw may or may not have landed
    CLOSED = "CLOSED"  # gone from the chain, its rent back with the platform fee payer (kept as a record)
    FAILED = "FAILED"  # a tenant's account whose creation transaction did not land: nothing exists on chain


class NonceAccount(models.Model):
    """A durable nonce account, leased to one transaction at a time: of the platform's pool
    (``tenant`` null) or a tenant's own (docs/transactions.md, "Tenant durable nonce accounts").

    Created by the pool task (``nonce_pool.nonce_pool_fill``), never by a request: the row,
    the account's own key and the authority key are committed (CREATING) before the creation
    is sent, so a crash at any point leaves a row the next fill finishes (READY) and whose
    rent can be recovered. A request leases (``leased_at`` set, ``leased_by`` null) and binds
    the lease to its transaction (``leased_by``) when it commits; an unbound lease older than
    ``LEDGER_NONCE_LEASE_TIMEOUT_SECONDS`` is reclaimed. The lease ends when the transaction
    finalizes or is provably dead. Free accounts above what the pool keeps are closed by the
    same task (``nonce_pool.nonce_pool_trim``): CLOSING is committed before the withdraw is
    sent (a claim on the same condition a lease takes, so never a leased account), CLOSED
    only once the chain shows the account gone.

    A tenant's account (Create Durable Nonce Accounts) is also an Account record of type
    NONCE (``account``), created by an ordinary network transaction of the tenant: its rows
    and keys are committed with that transaction before anything is sent, and the
    transaction's effects make it READY (or FAILED). The pool task never creates, finishes,
    trims or leases it to another tenant. Its authority may be a key the service does not
    hold (``authority_key`` null): a transaction using it then waits for that signature.
    """

    cluster = models.CharField(max_length=40, db_index=True)
    address = models.CharField(max_length=50)
    state = models.CharField(max_length=10, choices=NonceState.choices, default=NonceState.READY)
    #: null: the platform's pool; else the tenant that owns it (and ``account`` its record)
    tenant = models.ForeignKey("tenancy.TenantOrganization", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    account = models.OneToOneField("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="nonce", help_text="The tenant's Account record (type NONCE).")
    account_key = models.ForeignKey("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="The nonce account's own key (signs its creation).")
    authority = models.CharField(max_length=44, help_text="The nonce authority's address (it signs every AdvanceNonceAccount).")
    authority_key = models.ForeignKey("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="The authority's key when the service holds it.")
    authority_account = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="The tenant's account named as nonceAuthority, if any.")
    leased_by = models.OneToOneField("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="nonce_lease")
    leased_at = models.DateTimeField(null=True, blank=True)
    written_slot = models.BigIntegerField(null=True, blank=True, help_text=(
        "The slot of the service's last write of the account it knows of (its creation, an advance, a transaction that used it): "
        "reads of its nonce carry it as minContextSlot, so a node behind it never answers the value it held before (docs/chain.md)."))
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "tenant", "state"], name="nonce_cluster_tenant_state"),
            models.Index(fields=["authority"], name="nonce_authority"),  # the admin's search by address (docs/admin.md)
        ]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "address"], name="nonce_unique_address_per_cluster"),
            models.CheckConstraint(
                condition=Q(tenant__isnull=True, account__isnull=True, authority_key__isnull=False) | Q(tenant__isnull=False, account__isnull=False),
                name="nonce_pool_or_tenant", violation_error_message="A pool account has no tenant and its authority key; a tenant's has its Account record.",
            ),
        ]

    def __str__(self) -> str:
        return f"nonce {self.address} [{self.state}]"


class PumpLease(models.Model):
    """Who pumps one shard of a cluster's transactions (transactions/pump.py): one holder
    at a time. (The webhook delivery loop holds one too, shard 0 of its own name.)

    Taken and renewed by a compare-and-set UPDATE (this holder, or a lease that lapsed), so
    several workers never pump one shard together, and a killed holder's lease lapses
    after LEDGER_PUMP_LEASE_SECONDS."""

    cluster = models.CharField(max_length=40)
    shard = models.PositiveSmallIntegerField(default=0)
    holder = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "shard"], name="pump_lease_cluster_shard")]

    def __str__(self) -> str:
        return f"{self.cluster} pump shard {self.shard} ({self.holder or 'idle'})"


class PumpMember(models.Model):
    """A pump task running for a cluster, held or not: the holders count themselves here to
    share the cluster's shards (each takes at most ceil(shards / live members)). A row
    lapses with ``seen_until`` (a killed task) and is deleted when its task stops."""

    cluster = models.CharField(max_length=40)
    holder = models.CharField(max_length=200)
    seen_until = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "holder"], name="pump_member_cluster_holder")]

    def __str__(self) -> str:
        return f"{self.cluster} pump member {self.holder}"


class ProgramDeploymentState(models.TextChoices):
    DEPLOYING = "DEPLOYING"  # the program's key is recorded; its first deployment may or may not have landed
    DEPLOYED = "DEPLOYED"  # executable on the cluster with the recorded bytes


class ProgramDeployment(models.Model):
    """One of the project's programs (programs/) on a cluster, deployed or upgraded by
    ``python manage.py deploy_programs --cluster NAME`` (transactions/program_deploy.py;
    docs/programs.md, "Deploying").

    Invariants: one row per (cluster, program name) and per (cluster, program id); the
    program's upgrade authority is ``upgrade_authority_key``, a key the service holds (one
    per cluster, shared by its programs); ``program_key`` signed the program account's
    creation and is kept so that a first deployment cut short resumes at the same id; the
    row is written (DEPLOYING) before anything is sent. Settings (LEDGER_PROGRAM_IDS) name a
    cluster's ids instead when the operator configures them; a configured id wins.
    """

    cluster = models.CharField(max_length=40)
    name = models.CharField(max_length=40, help_text="The program's folder under programs/ (allowlist_hook, loan_vault).")
    program_id = models.CharField(max_length=44)
    program_key = models.ForeignKey("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="The program account's key (it signs the account's creation).")
    upgrade_authority_key = models.ForeignKey("custody.ManagedKey", on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=10, choices=ProgramDeploymentState.choices, default=ProgramDeploymentState.DEPLOYING)
    sha256 = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the program bytes last deployed or upgraded.")
    size = models.PositiveIntegerField(default=0)
    max_data_len = models.PositiveIntegerField(default=0, help_text="Room of the program data account for the ELF (upgrades up to it need no ExtendProgram).")
    deployed_slot = models.BigIntegerField(null=True, blank=True, help_text="Slot of the last deployment or upgrade.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="program_deployment_one_per_cluster", violation_error_message="This program is already recorded on the cluster."),
            models.UniqueConstraint(fields=["cluster", "program_id"], name="program_deployment_unique_id", violation_error_message="This program id is already recorded on the cluster."),
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.cluster} at {self.program_id} [{self.state}]"


class OrganizationPlatformFees(TenantOrganization):
    """An organization as the fee policy sees it: the fees the platform's fee payer paid, or
    may still pay, for its transactions (transactions/fees.py; the admin's "Platform-paid
    fees" page). A proxy: no table of its own."""

    class Meta:
        proxy = True
        verbose_name = "platform-paid fees of an organization"
        verbose_name_plural = "platform-paid fees"
