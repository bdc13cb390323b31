"""Vault responses (docs/vaults.md, "Fetch Vault Details")."""

from __future__ import annotations

from accounts.render import uuid_text
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text
from positions.values import token_value


@renders("vaults.serializers.VaultIdentifiersOutput")
def vault_identifiers(v) -> dict:
    """The vault: its token account's address and its offchainId (its position's)."""
    return {"onchainId": v.token_address, "offchainId": uuid_text(v.offchain_id)}


def _instrument(i) -> dict:
    return {"onchainId": i.address, "offchainId": uuid_text(i.offchain_id), "alId": i.al_id}


def _transaction(tx) -> dict | None:
    if tx is None:
        return None
    # A transaction held for approval keeps its signature undisclosed (positions/limits.py).
    return {"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": uuid_text(tx.offchain_id)}


@renders("vaults.serializers.VaultOutput")
def vault_detailed(v) -> dict:
    return {
        "vault": vault_identifiers(v),
        "vaultAuthority": {"onchainId": v.authority_address, "offchainId": uuid_text(v.authority_account.offchain_id)},
        "whitelistAccount": {"onchainId": v.state_address},
        "program": {"onchainId": v.program_address},
        "loanFinancialInstrument": _instrument(v.loan_instrument),
        "paymentFinancialInstrument": _instrument(v.payment_instrument),
        "admin": {"onchainId": v.admin_address, "offchainId": uuid_text(v.admin.offchain_id) if v.admin is not None else None},
        "status": v.status,
        "capacity": int(v.capacity),
        "whitelist": [{"onchainId": d.address, "offchainId": uuid_text(d.position.offchain_id) if d.position is not None else None} for d in v.destinations.all()],
        "lastSequence": int(v.last_sequence_onchain),
        "balance": token_value(v.position.account.token_balance or 0, v.payment_instrument),
        "createdAt": timestamp_text(v.created_at),
        "closedAt": timestamp_text(v.closed_at),
        "creationTransaction": _transaction(v.creation_transaction),
        "lastTransaction": _transaction(v.last_transaction),
    }
