"""Loan remittance vaults (spec: "Loan remittance vaults"; docs/vaults.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenancy.scoping import TenantOwnedModel


class VaultStatus(models.TextChoices):
    PENDING = "PENDING"  # creation transaction not confirmed yet
    ACTIVE = "ACTIVE"
    CLOSED = "CLOSED"  # closed on chain: the token account and the state are gone
    FAILED = "FAILED"  # the creation failed or expired: nothing exists on chain


#: Instrument types (alId) a vault's loan may have (spec: the FIXED_INCOME loan types).
LOAN_TYPES = ("LOAN", "CORPORATE_LOAN", "MUNI_LOAN", "AUTO_LOAN", "BROKER_CD")


class Vault(TenantOwnedModel):
    """A loan remittance vault of the loan_vault program for a (loan, payment instrument)
    pair (docs/vaults.md).

    Invariants: ``position`` is the vault's token account (the vault authority's associated
    token account of the payment mint), a position of type FUNDS_TOKEN_ACCOUNT whose owner
    is ``authority_account`` (type VAULT_AUTHORITY: the PDA, no key); the vault's
    ``offchain_id`` is its position's (one identity offchain); the addresses are the
    program's derivations for the pair; one vault row per pair and tenant (a FAILED or
    CLOSED one is opened again in place); ``last_sequence`` is the last repayment sequence the service handed
    out (allocated under this row's lock, in order; it keeps counting when a closed pair is
    opened again, in place like a position: rows and history stay); at most one transaction changes the
    vault at a time (``pending_transaction``, the in-flight marker); ``destinations`` and
    ``last_sequence_onchain`` copy the chain's state after each confirmed change
    (``synced_slot``: an older read never overwrites a newer one).
    """

    loan_instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="+")
    payment_instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="+")
    position = models.OneToOneField("positions.Position", on_delete=models.PROTECT, related_name="vault", help_text="The vault token account's position.")
    authority_account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+", help_text="The vault authority PDA's record (type VAULT_AUTHORITY).")
    program_address = models.CharField(max_length=44)
    authority_address = models.CharField(max_length=44)
    state_address = models.CharField(max_length=44, help_text="The program-owned whitelist / state account.")
    token_address = models.CharField(max_length=44, help_text="The vault token account (the position's address).")
    token_program = models.CharField(max_length=44)
    admin_address = models.CharField(max_length=44, help_text="Recorded on chain at creation; signs whitelist updates, repayments and closing.")
    admin = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The organization's record of the admin, when it has one.")
    capacity = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=VaultStatus.choices, default=VaultStatus.PENDING, db_index=True)
    last_sequence = models.PositiveBigIntegerField(default=0, help_text="The last repayment sequence handed out.")
    last_sequence_onchain = models.PositiveBigIntegerField(default=0, help_text="The vault's last repayment sequence on chain, as of synced_slot.")
    rent_payer_address = models.CharField(max_length=44, blank=True, help_text="Who paid the creation's rent.")
    rent_payer = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="Its record, when it is an account of the organization (the default refund destination).")
    synced_slot = models.BigIntegerField(null=True, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "loan_instrument", "payment_instrument"], name="vault_pair"),
            models.Index(fields=["tenant", "cluster", "token_address"], name="vault_token_address"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "cluster", "state_address"], name="vault_one_per_pair",
                violation_error_message="The organization already has a vault for this loan and payment instrument.",
            ),
            models.CheckConstraint(condition=Q(capacity__gte=1) & Q(capacity__lte=256), name="vault_capacity_1_256", violation_error_message="A vault's whitelist holds 1 to 256 destinations."),
        ]

    def __str__(self) -> str:
        return f"vault {self.token_address} [{self.status}]"


class VaultDestination(models.Model):
    """A whitelisted repayment destination, as the vault's state held it at the vault's
    ``synced_slot`` (copied from the chain after each confirmed change; in whitelist order)."""

    vault = models.ForeignKey("vaults.Vault", on_delete=models.CASCADE, related_name="destinations")
    address = models.CharField(max_length=44, help_text="The destination token account.")
    index = models.PositiveSmallIntegerField()
    position = models.ForeignKey("positions.Position", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The organization's position at that address, if any.")

    class Meta:
        ordering = ["vault", "index"]
        constraints = [models.UniqueConstraint(fields=["vault", "address"], name="vault_destination_once")]

    def __str__(self) -> str:
        return f"{self.address} of {self.vault_id}"
