"""Financial instruments: token mints on the network and their offchain records."""

from __future__ import annotations

from django.db import models

from ledger_project.fields import JSONField
from tenancy.scoping import TenantOwnedModel


class TokenVersion(models.TextChoices):
    SPL = "SPL"
    TOKEN_2022 = "TOKEN_2022"


class InstrumentStatus(models.TextChoices):
    PENDING = "PENDING"  # creation transaction not confirmed yet
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"  # the creation transaction failed or expired
    CLOSED = "CLOSED"


class PositionState(models.TextChoices):
    """defaultPositionState: the state new positions (token accounts) start in."""

    INITIALIZED = "INITIALIZED"
    FROZEN = "FROZEN"


#: Authority roles, in the spec's order (bulk fieldNames {role}AuthorityOnchainId).
AUTHORITY_ROLES = (
    "mint", "update", "freeze", "permanentDelegate", "closing", "pausable",
    "scaledUiAmount", "transferHook", "confidentialTransfer", "confidentialMintBurn",
)
_ROLE_COLUMNS = {
    "mint": "mint", "update": "update", "freeze": "freeze", "permanentDelegate": "permanent_delegate",
    "closing": "closing", "pausable": "pausable", "scaledUiAmount": "scaled_ui_amount",
    "transferHook": "transfer_hook", "confidentialTransfer": "confidential_transfer",
    "confidentialMintBurn": "confidential_mint_burn",
}


def authority_column(role: str) -> str:
    """Python name of a role's authority: ``<column>_authority`` (FK) and ``<column>_authority_address``."""
    return f"{_ROLE_COLUMNS[role]}_authority"


class AlIdSequence(models.Model):
    """The last alId sequence number issued per organization, cluster, category and type
    (alIds are unique per organization and cluster; a sequence of its own per organization
    reveals nothing of another's issuance). The row is locked and incremented in the same
    database transaction that records the instrument (instruments/alid.py)."""

    tenant = models.ForeignKey("tenancy.TenantOrganization", on_delete=models.CASCADE, related_name="+")
    cluster = models.CharField(max_length=40)
    category = models.CharField(max_length=8)
    instrument_type = models.CharField(max_length=8)
    last_value = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "cluster", "category", "instrument_type"], name="alid_sequence_unique_per_tenant")]

    def __str__(self) -> str:
        return f"AL{self.category}{self.instrument_type} @ {self.last_value}"


class FinancialInstrument(TenantOwnedModel):
    """A token mint (spec: Financial instruments).

    Invariants: the mint is an Account record of the same tenant and cluster (type
    ASSET_TOKEN or CURRENCY_TOKEN); ``al_id`` follows the identifier pattern and is unique
    per tenant and cluster; onchain fields (authorities, extensions, metadata, supply) are
    the chain's, refreshed from the mint account whenever a transaction touching it
    confirms (instruments/effects.py), never from a read older than ``synced_slot``;
    ``offchain_data`` belongs to the service alone.
    """

    mint_account = models.OneToOneField("accounts.Account", on_delete=models.PROTECT, related_name="instrument")
    address = models.CharField(max_length=44, help_text="The mint address (same as the mint account's).")
    version = models.CharField(max_length=10, choices=TokenVersion.choices)
    status = models.CharField(max_length=10, choices=InstrumentStatus.choices, default=InstrumentStatus.ACTIVE, db_index=True)
    managed = models.BooleanField(default=True, help_text="Created by the service (false when onboarded with alreadyOnchain).")
    was_onchain_already = models.BooleanField(default=False)
    shared_across_tenants = models.BooleanField(default=False)
    al_id = models.CharField(max_length=24)
    al_category = models.CharField(max_length=16)
    al_type = models.CharField(max_length=32)
    name = models.CharField(max_length=200, blank=True, help_text="Onchain metadata name (or the service's copy for SPL).")
    symbol = models.CharField(max_length=32, blank=True)
    uri = models.CharField(max_length=200, blank=True)
    decimals = models.PositiveSmallIntegerField(default=0)
    onchain_metadata = JSONField(default=dict, blank=True, help_text="Custom key/value pairs of the onchain token metadata.")
    offchain_data = JSONField(default=dict, blank=True)
    extensions = JSONField(default=list, blank=True, help_text="Token-2022 extension identifiers (spec form).")
    default_position_state = models.CharField(max_length=12, choices=PositionState.choices, null=True, blank=True)
    paused = models.BooleanField(null=True, blank=True)
    scaled_ui_multiplier = models.FloatField(null=True, blank=True)
    transfer_hook_program = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    transfer_hook_program_address = models.CharField(max_length=44, blank=True)
    supply_onchain = models.DecimalField(max_digits=20, decimal_places=0, default=0, help_text="Base units, as of the last sync.")
    supply_offchain = models.DecimalField(max_digits=20, decimal_places=0, default=0, help_text="Base units the service's own operations account for.")
    data_length = models.PositiveIntegerField(default=0)
    comments = models.CharField(max_length=2000, blank=True)
    post_transaction_submit_webhooks = JSONField(default=list, blank=True, help_text="Secrets are stored encrypted (instruments/webhooks.py).")
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # In-flight marker: the transaction of a mutation still under way; a second mutation
    # that needs a transaction is refused (409 OPERATION_IN_PROGRESS) until it ends.
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    creation_transaction_at = models.DateTimeField(null=True, blank=True)
    last_transaction_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    # The slot of the chain read the onchain fields come from: a sync from an older read
    # (overtaken by another worker's fresher one) is skipped, so they never move backwards.
    synced_slot = models.PositiveBigIntegerField(null=True, blank=True)

    # Authorities: the FK when the service records the address, the address always (as on chain).
    mint_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    mint_authority_address = models.CharField(max_length=44, blank=True)
    update_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    update_authority_address = models.CharField(max_length=44, blank=True)
    freeze_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    freeze_authority_address = models.CharField(max_length=44, blank=True)
    permanent_delegate_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    permanent_delegate_authority_address = models.CharField(max_length=44, blank=True)
    closing_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    closing_authority_address = models.CharField(max_length=44, blank=True)
    pausable_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    pausable_authority_address = models.CharField(max_length=44, blank=True)
    scaled_ui_amount_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    scaled_ui_amount_authority_address = models.CharField(max_length=44, blank=True)
    transfer_hook_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    transfer_hook_authority_address = models.CharField(max_length=44, blank=True)
    confidential_transfer_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    confidential_transfer_authority_address = models.CharField(max_length=44, blank=True)
    confidential_mint_burn_authority = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    confidential_mint_burn_authority_address = models.CharField(max_length=44, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "-managed", "-version", "-id"], name="instr_default_sort"),
            models.Index(fields=["tenant", "cluster", "version", "-creation_transaction_at"], include=["paused", "managed"], name="instr_version_created"),
            models.Index(fields=["address", "cluster"], name="instr_address"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster", "al_id"], name="instr_unique_alid", violation_error_message="This alId is already used in the organization."),
            models.UniqueConstraint(fields=["tenant", "cluster", "address"], name="instr_unique_mint", violation_error_message="This mint is already recorded for the organization."),
        ]

    def __str__(self) -> str:
        return f"{self.al_id} {self.symbol or self.address}"
