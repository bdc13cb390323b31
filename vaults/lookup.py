"""Vault lookups and repayment destinations (docs/vaults.md, "Lookups").

A vault is named by ``onchainId`` (its token account's address), ``offchainId`` (its
position's), or its pair: ``loanFinancialInstrument`` + ``paymentFinancialInstrument``
(instrument lookups). Several forms given must name the same vault (404
CONFLICTING_LOOKUP, like every lookup whose fields disagree). Only the acting
organization's own vaults: another's answers like a missing one (404).

A destination (a whitelist entry, a repayment's payee) is named by ``position`` (a position
of the organization) or by ``owner`` (an account of the organization, or any address
``{onchainId, offPlatform: true}``: the owner's associated token account of the vault's
payment instrument, recorded as a position or not).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from accounts.lookup import OffPlatform, resolve_account, single_match
from accounts.models import Account
from instruments.lookup import resolve_instrument
from ledger_project.api.errors import LedgerError, NotFoundError
from positions import instructions as ix
from positions.lookup import resolve_position
from positions.models import Position

from .models import Vault

VAULT_RELATED = ("loan_instrument", "payment_instrument", "position", "position__account", "position__instrument", "position__owner", "authority_account",
                 "admin", "admin__managed_key", "rent_payer", "pending_transaction", "creation_transaction", "last_transaction")


def vaults_of(tenant, cluster: str):
    return Vault.objects.for_tenant(tenant).filter(cluster=cluster).select_related(*VAULT_RELATED)


def resolve_vault(tenant, cluster: str, lookup: dict | None, *, field: str) -> Vault:
    if not isinstance(lookup, dict):
        raise LedgerError("A vault lookup is required.", field=field, code="REQUIRED")
    onchain_id, offchain_id = lookup.get("onchainId"), lookup.get("offchainId")
    loan_lookup, payment_lookup = lookup.get("loanFinancialInstrument"), lookup.get("paymentFinancialInstrument")
    if bool(loan_lookup) != bool(payment_lookup):
        missing = "paymentFinancialInstrument" if loan_lookup else "loanFinancialInstrument"
        raise LedgerError("A vault's pair names both instruments.", field=f"{field}.{missing}", code="REQUIRED")
    if not (onchain_id or offchain_id or loan_lookup):
        raise LedgerError("A vault lookup needs onchainId, offchainId, or loanFinancialInstrument and paymentFinancialInstrument.", field=field, code="INVALID_LOOKUP")
    vaults = vaults_of(tenant, cluster)
    matches = []
    if offchain_id:
        matches.append(("offchainId", vaults.filter(offchain_id=uuid.UUID(str(offchain_id))).first()))
    if onchain_id:
        matches.append(("onchainId", vaults.filter(token_address=onchain_id).first()))
    if loan_lookup:
        loan = resolve_instrument(tenant, cluster, loan_lookup, field=f"{field}.loanFinancialInstrument")
        payment = resolve_instrument(tenant, cluster, payment_lookup, field=f"{field}.paymentFinancialInstrument")
        matches.append(("loanFinancialInstrument", vaults.filter(loan_instrument=loan, payment_instrument=payment).first()))
    found = single_match(matches, field)
    if found is None:
        raise NotFoundError("No such vault.", field=field)
    return found


@dataclass(frozen=True)
class Destination:
    """A token account of the vault's payment instrument: its address, the organization's
    position there (if any) and its owner (a record, an off-platform address, or None when
    only a position named it)."""

    address: str
    position: Position | None
    owner: Account | OffPlatform | None

    @property
    def identifiers(self) -> dict:
        return {"onchainId": self.address, "offchainId": str(self.position.offchain_id) if self.position is not None else None}

    def for_limits(self):
        """What positions/limits.py classifies: the position, else its owner."""
        return self.position if self.position is not None else (self.owner or OffPlatform(self.address))


def resolve_destination(tenant, cluster: str, vault: Vault, lookup: dict | None, *, field: str) -> Destination:
    if not isinstance(lookup, dict) or not (lookup.get("position") or lookup.get("owner")):
        raise LedgerError("A destination is named by position or by owner.", field=field, code="REQUIRED")
    if lookup.get("position") and lookup.get("owner"):
        raise LedgerError("Name the destination by position or by owner, not both.", field=f"{field}.owner", code="CONFLICTING_FIELDS")
    if lookup.get("position"):
        # Any position of the organization, whatever its instrument or status: the program
        # judges what it can hold (DestinationWrongMint, DestinationNotTokenAccount).
        position = resolve_position(tenant, cluster, {"position": lookup["position"]}, field=field)
        return Destination(position.address, position, None)
    owner = resolve_account(tenant, cluster, lookup["owner"], field=f"{field}.owner", allow_off_platform=True)
    address = str(ix.associated_address(owner.address, vault.payment_instrument))
    position = Position.objects.for_tenant(tenant).filter(cluster=cluster, address=address).select_related("owner", "instrument", "account").first()
    return Destination(address, position, owner)


def vault_controller(tenant, account: Account):
    """positions/limits.py CONTROLLED_BY for VAULT_AUTHORITY records: tokens sent to a vault
    are controlled by whoever holds its admin's key (its record, else its address)."""
    vault = Vault.objects.for_tenant(tenant).filter(authority_account=account).select_related("admin").order_by().first()
    if vault is None:
        return None
    return vault.admin if vault.admin is not None and vault.admin.address == vault.admin_address else vault.admin_address
