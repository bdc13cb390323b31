"""Address lookup tables owned by tenants (docs/lookup-tables.md).

The table keeps the name it had when this area lived in the transactions app
(``transactions_addresslookuptable``): moving the model moved no data.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenancy.scoping import TenantOwnedModel


class LookupTableState(models.TextChoices):
    """An address lookup table's life (docs/lookup-tables.md)."""

    CREATING = "CREATING"  # creation transaction recorded, not yet confirmed
    ACTIVE = "ACTIVE"  # on chain, extendable; V0 messages of its tenant compress through it
    FROZEN = "FROZEN"  # authority removed on chain: never changes again; still used for compression
    DEACTIVATED = "DEACTIVATED"  # deactivation confirmed: no new transaction uses it; closable after the cool-down
    CLOSED = "CLOSED"  # closed on chain, its rent with the recipient (kept as a record)
    FAILED = "FAILED"  # the creation transaction never executed: nothing exists on chain


#: States in which a table exists on chain and is not deactivated: usable in V0 messages.
LOOKUP_TABLE_USABLE = (LookupTableState.ACTIVE, LookupTableState.FROZEN)


class AddressLookupTable(TenantOwnedModel):
    """An address lookup table a tenant created through the service (Create Address Lookup Table).

    Invariants: one row per (cluster, address); ``addresses`` is the table's content as the
    chain stored it, copied from a read made after a transaction of the table confirmed
    (``synced_slot``: a read older than the one the row reflects never overwrites it), so
    it never lists an address a pending extension only asks for; at most one transaction
    changes the table at a time (``pending_transaction``, the in-flight marker); the
    authority signs every change: the service holds its key (``authority_key``), or it is a
    tenant account that signs off platform.
    """

    address = models.CharField(max_length=44)
    state = models.CharField(max_length=12, choices=LookupTableState.choices, default=LookupTableState.CREATING)
    authority = models.CharField(max_length=44, help_text="The table's authority (signs extend, freeze, deactivate, close).")
    authority_key = models.ForeignKey("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="Its key, when the service holds it.")
    authority_account = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The tenant account named as authority, if any.")
    addresses = models.JSONField(default=list, blank=True, help_text="The addresses stored on chain, in table order.")
    addresses_count = models.PositiveSmallIntegerField(default=0)
    last_extended_slot = models.BigIntegerField(null=True, blank=True)
    # Addresses from this index on were added in last_extended_slot: the runtime lets a
    # message load them only from the next slot on.
    last_extended_start_index = models.PositiveSmallIntegerField(default=0)
    deactivation_slot = models.BigIntegerField(null=True, blank=True)
    synced_slot = models.BigIntegerField(null=True, blank=True, help_text="Slot of the chain read the row reflects.")
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "transactions_addresslookuptable"
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "state"], name="alt_tenant_state"),
            models.Index(fields=["authority"], name="alt_authority"),  # the admin's search by address (docs/admin.md)
        ]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "address"], name="alt_unique_address_per_cluster", violation_error_message="This lookup table is already recorded."),
            models.CheckConstraint(condition=Q(addresses_count__lte=256), name="alt_at_most_256_addresses", violation_error_message="A lookup table holds at most 256 addresses."),
        ]

    def __str__(self) -> str:
        return f"lookup table {self.address} [{self.state}]"
