"""Positions: token accounts holding a financial instrument for an owner (docs/positions.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ledger_project.fields import JSONField
from tenancy.scoping import TenantOwnedModel


class PositionStatus(models.TextChoices):
    PENDING = "PENDING"  # initialization transaction not confirmed yet
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"  # token account closed on the network
    FAILED = "FAILED"  # the initialization failed or expired: nothing exists on chain


class Position(TenantOwnedModel):
    """One token account of ``owner`` for ``instrument`` (spec: Positions).

    Invariants: ``account`` is the token account's Account record (type FUNDS_TOKEN_ACCOUNT
    or ASSET_TOKEN_ACCOUNT, same tenant, cluster and address), which carries the offchain
    token balance (``Account.token_balance``, base units) and lamports; one position per
    (tenant, cluster, address); at most one *associated* position per owner and instrument
    (the associated token account is unique per owner, mint and token program). Token
    balances move only when a transaction confirms (positions/effects.py), once.
    ``token_debit_limits`` None: the owner's tokenDebitLimits, else the token defaults
    (positions/limits.py).
    """

    account = models.OneToOneField("accounts.Account", on_delete=models.PROTECT, related_name="position")
    address = models.CharField(max_length=44, help_text="The token account address (same as the account's).")
    owner = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="positions")
    owner_address = models.CharField(max_length=44)
    instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="positions")
    associated = models.BooleanField(default=True, help_text="The owner's associated token account (else an account of its own key).")
    status = models.CharField(max_length=10, choices=PositionStatus.choices, default=PositionStatus.ACTIVE, db_index=True)
    frozen = models.BooleanField(default=False)
    delegate_address = models.CharField(max_length=44, blank=True)
    delegated_amount = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    was_onchain_already = models.BooleanField(default=False)
    token_debit_limits = JSONField(null=True, blank=True)
    token_debit_api_keys = JSONField(default=list, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # In-flight marker: a freeze, thaw, close or delegate change under way; a second one is
    # refused (409 OPERATION_IN_PROGRESS) until it ends. Movements do not set it: the
    # program orders them, and balances follow the chain.
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "-id"], include=["status"], name="pos_tenant_cluster"),
            models.Index(fields=["owner", "instrument"], name="pos_owner_instrument"),
            models.Index(fields=["address", "cluster"], name="pos_address_cluster"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster", "address"], name="pos_unique_address", violation_error_message="This token account is already a position of the organization."),
            models.UniqueConstraint(
                fields=["tenant", "cluster", "owner", "instrument"], condition=Q(associated=True) & ~Q(status__in=["FAILED", "INACTIVE"]),
                name="pos_unique_associated", violation_error_message="The owner already has a position in this instrument.",
            ),
        ]

    def __str__(self) -> str:
        return f"position {self.address} [{self.status}]"


class PositionBalanceSnapshot(models.Model):
    """Offchain token balance of a position after a confirmed transaction (base units)."""

    position = models.ForeignKey("positions.Position", on_delete=models.CASCADE, related_name="balance_history")
    amount = models.DecimalField(max_digits=20, decimal_places=0)
    transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    slot = models.BigIntegerField(null=True, blank=True)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at", "-pk"]
        # pos_balance_slot: a position's latest entry from a transaction, read for every
        # confirmation that moves it (positions/balances.py), without scanning its history.
        indexes = [models.Index(fields=["position", "-at"], name="pos_balance_at"), models.Index(fields=["position", "-slot", "-at", "-id"], name="pos_balance_slot")]
        constraints = [models.UniqueConstraint(fields=["position", "transaction"], condition=Q(transaction__isnull=False), name="pos_balance_once_per_tx")]


class BatchKind(models.TextChoices):
    TRANSFER = "TRANSFER"  # Transfer Financial Instrument, item by item
    NETWORK_CURRENCY_TRANSFER = "NETWORK_CURRENCY_TRANSFER"  # Transfer Network Currency, item by item


class BatchItemStatus(models.TextChoices):
    """Where an item stands on the service's side; once SENT, its transaction's status
    says the rest (positions/batches.py renders the two as one)."""

    REJECTED = "REJECTED"  # refused before anything was signed (``errors``): never sent
    SENT = "SENT"  # recorded in ``transaction`` (alone, or packed with other items)
    RETRY_DUE = "RETRY_DUE"  # its packed transaction failed on chain: to be built again alone


class Batch(TenantOwnedModel):
    """One batch payout request (docs/positions.md, "Batch payouts"): up to 1,000 transfers
    recorded together. Invariant: its items are written in the same database transaction
    as the batch and the transactions that carry them, so a batch is all there or absent."""

    kind = models.CharField(max_length=30, choices=BatchKind.choices)
    request_id = models.UUIDField(null=True, blank=True)
    created_by_key = models.ForeignKey("tenancy.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    item_count = models.PositiveIntegerField()
    svm_config = JSONField(null=True, blank=True, help_text="The request's svmTransactionConfig: retries build with it.")

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["tenant", "cluster", "-id"], name="pos_batch_tenant")]

    def __str__(self) -> str:
        return f"batch {self.offchain_id} ({self.item_count} items)"


class BatchItem(models.Model):
    """One transfer of a batch, by its index in the request. Invariants: ``errors`` is set
    exactly when REJECTED; ``transaction`` exactly when SENT (``first_transaction``: the
    packed transaction it was in before a retry built it alone)."""

    batch = models.ForeignKey("positions.Batch", on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    data = JSONField(help_text="The item's itemData as the request gave it.")
    status = models.CharField(max_length=10, choices=BatchItemStatus.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    errors = JSONField(null=True, blank=True)
    result = JSONField(null=True, blank=True, help_text="destinationPosition identifiers.")
    transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    first_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["batch", "index"]
        indexes = [models.Index(fields=["transaction"], name="pos_batch_item_tx")]
        constraints = [
            models.UniqueConstraint(fields=["batch", "index"], name="pos_batch_item_index", violation_error_message="A batch has one item per index."),
            models.CheckConstraint(
                condition=Q(status="REJECTED", errors__isnull=False) | Q(status="SENT", transaction__isnull=False) | Q(status="RETRY_DUE"),
                name="pos_batch_item_state", violation_error_message="A rejected item says why; a sent item names its transaction.",
            ),
        ]
