"""Accounts area: blockchain account records (managed keys are custody's: custody/models.py)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ledger_project.fields import JSONField
from tenancy.scoping import TenantOwnedModel


class AccountType(models.TextChoices):
    """offchainReferences.type: the spec's values plus ours (docs/accounts.md)."""

    WALLET = "WALLET"
    ASSETS_WALLET = "ASSETS_WALLET"
    CURRENCIES_WALLET = "CURRENCIES_WALLET"
    DEFI_SETTLEMENT_WALLET = "DEFI_SETTLEMENT_WALLET"
    FUNDS_TOKEN_ACCOUNT = "FUNDS_TOKEN_ACCOUNT"
    ASSET_TOKEN_ACCOUNT = "ASSET_TOKEN_ACCOUNT"
    FUNDS_TOKEN = "FUNDS_TOKEN"
    ASSET_TOKEN = "ASSET_TOKEN"
    CURRENCY_TOKEN = "CURRENCY_TOKEN"
    ADDRESS_LOOKUP_TABLE = "ADDRESS_LOOKUP_TABLE"
    NONCE = "NONCE"
    TOKEN_MANAGEMENT_AUTHORITY = "TOKEN_MANAGEMENT_AUTHORITY"
    # Added here: accounts the spec's areas create but its list does not name.
    FEE_PAYER = "FEE_PAYER"
    LOAN_ESCROW = "LOAN_ESCROW"
    VAULT = "VAULT"
    VAULT_AUTHORITY = "VAULT_AUTHORITY"
    ORACLE_DATA_SOURCE = "ORACLE_DATA_SOURCE"
    PROGRAM = "PROGRAM"
    OTHER = "OTHER"


#: Account types that carry debit limits (spec, New account definition).
WALLET_TYPES = frozenset({AccountType.WALLET, AccountType.ASSETS_WALLET, AccountType.CURRENCIES_WALLET, AccountType.DEFI_SETTLEMENT_WALLET})
#: Types created through their own endpoints, not Create Account (spec, Create Account).
SPECIALIZED_TYPES = frozenset({AccountType.FUNDS_TOKEN_ACCOUNT, AccountType.ASSET_TOKEN_ACCOUNT, AccountType.ADDRESS_LOOKUP_TABLE, AccountType.NONCE})


class AccountStatus(models.TextChoices):
    PENDING = "PENDING"  # creation transaction not yet confirmed
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"
    FAILED = "FAILED"  # creation transaction failed or expired: nothing exists on chain


class Account(TenantOwnedModel):
    """A blockchain account the service knows: managed (key in custody) or not.

    Invariants: one record per (tenant, cluster, address); a managed account has a
    ManagedKey whose public key is its address; offchain references (code, alId,
    organization + account number) are unique within the tenant; debit limits apply only
    to wallet types (None = the spec's defaults).
    """

    address = models.CharField(max_length=44)
    managed = models.BooleanField(default=False)
    managed_key = models.OneToOneField("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="account")
    type = models.CharField(max_length=32, choices=AccountType.choices, default=AccountType.WALLET)
    status = models.CharField(max_length=10, choices=AccountStatus.choices, default=AccountStatus.ACTIVE, db_index=True)
    code = models.CharField(max_length=64, blank=True)
    al_id = models.CharField(max_length=32, blank=True)
    organization_external_id = models.CharField(max_length=64, blank=True)
    account_number = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=200, blank=True)
    comments = models.TextField(blank=True)
    domain = models.CharField(max_length=200, blank=True)
    is_genesis = models.BooleanField(default=False)
    is_derived = models.BooleanField(default=False)
    subscribe_to_network_events = models.BooleanField(default=False)
    shared_across_tenants = models.BooleanField(default=False)
    was_onchain_already = models.BooleanField(default=False)
    can_pay_fees = models.BooleanField(default=False)
    private_key_location = JSONField(default=list, blank=True)
    orgs_allowed_to_sign = JSONField(default=list, blank=True)
    global_fee_payer_for_orgs = JSONField(default=list, blank=True)
    network_currency_debit_api_keys = JSONField(default=list, blank=True)
    token_debit_api_keys = JSONField(default=list, blank=True)
    network_currency_debit_limits = JSONField(null=True, blank=True)
    token_debit_limits = JSONField(null=True, blank=True)
    data_length = models.PositiveIntegerField(default=0)
    lamports_balance = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    token_balance = models.DecimalField(max_digits=20, decimal_places=0, null=True, blank=True)
    token_decimals = models.PositiveSmallIntegerField(null=True, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    creation_transaction_at = models.DateTimeField(null=True, blank=True)
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # In-flight marker: the transaction of a mutation still under way; a second mutation
    # that needs a transaction is refused (409 OPERATION_IN_PROGRESS) until it ends.
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [
            # Covers the common filters so page totals count from the index alone.
            models.Index(fields=["tenant", "cluster", "type", "-id"], include=["managed", "status"], name="acct_tenant_type"),
            models.Index(fields=["tenant", "-creation_transaction_at"], name="acct_tenant_created"),
            models.Index(fields=["tenant", "-last_transaction_at"], name="acct_tenant_lasttx"),
            models.Index(fields=["address", "cluster"], name="acct_address_cluster"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster", "address"], name="acct_unique_address", violation_error_message="This address is already recorded for the organization."),
            models.UniqueConstraint(fields=["tenant", "cluster", "code"], condition=~Q(code=""), name="acct_unique_code", violation_error_message="This code is already used."),
            models.UniqueConstraint(fields=["tenant", "cluster", "al_id"], condition=~Q(al_id=""), name="acct_unique_alid", violation_error_message="This alId is already used."),
            models.UniqueConstraint(fields=["tenant", "cluster", "organization_external_id", "account_number"], condition=~Q(account_number=""), name="acct_unique_number", violation_error_message="This account number is already used."),
            models.CheckConstraint(condition=Q(managed=False) | Q(managed_key__isnull=False), name="acct_managed_has_key", violation_error_message="A managed account needs its key."),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.address}"


class BalanceSnapshot(models.Model):
    """Offchain network-currency balance of an account after a confirmed transaction."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="balance_history")
    lamports = models.DecimalField(max_digits=20, decimal_places=0)
    transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["account", "-at"], name="balance_account_at")]


class PrivateKeyDisclosure(models.Model):
    """Audit trail: every private key export (who, which key, when, which request)."""

    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="key_disclosures")
    api_key = models.ForeignKey("tenancy.ApiKey", on_delete=models.PROTECT, related_name="+")
    acting_tenant = models.ForeignKey("tenancy.TenantOrganization", on_delete=models.PROTECT, related_name="+")
    request_id = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at"]

from .mpc.models import DkgPlayer, DkgSession, SigningNonce, SigningPlayer, SigningSession, ThresholdKey, ThresholdShare  # noqa: E402,F401  (threshold keys: accounts/mpc)
