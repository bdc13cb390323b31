"""Position responses (docs/positions.md, "Position response")."""

from __future__ import annotations

from accounts.render import account_compact, account_detailed, uuid_text
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text

from .values import token_value


@renders("positions.serializers.PositionIdentifiersOutput")
def position_identifiers(p) -> dict:
    return {"onchainId": p.address, "offchainId": uuid_text(p.offchain_id)}


def _instrument(i) -> dict:
    return {"onchainId": i.address, "offchainId": uuid_text(i.offchain_id), "alId": i.al_id, "version": i.version,
            "symbol": i.symbol, "decimals": i.decimals, "paused": i.paused}


@renders("positions.serializers.PositionCompactOutput")
def position_compact(p) -> dict:
    return {
        **position_identifiers(p),
        "owner": {"onchainId": p.owner_address, "offchainId": uuid_text(p.owner.offchain_id)},
        "financialInstrument": {"onchainId": p.instrument.address, "offchainId": uuid_text(p.instrument.offchain_id), "alId": p.instrument.al_id},
        "status": p.status,
        "state": "FROZEN" if p.frozen else "INITIALIZED",
        "balance": token_value(p.account.token_balance or 0, p.instrument),
    }


@renders("positions.serializers.PositionOutput")
def position_detailed(p) -> dict:
    return {
        **position_identifiers(p),
        "account": account_detailed(p.account),
        "owner": account_compact(p.owner),
        "financialInstrument": _instrument(p.instrument),
        "status": p.status,
        "state": "FROZEN" if p.frozen else "INITIALIZED",
        "isAssociated": p.associated,
        "wasOnchainAlready": p.was_onchain_already,
        "balance": token_value(p.account.token_balance or 0, p.instrument),
        "delegate": {"onchainId": p.delegate_address, "delegatedAmount": token_value(p.delegated_amount, p.instrument)} if p.delegate_address else None,
        "tokenDebitLimits": p.token_debit_limits,
        "tokenDebitApiKeys": list(p.token_debit_api_keys or []),
        "lastTransactionAt": timestamp_text(p.last_transaction_at),
        "createdAt": timestamp_text(p.created_at),
    }


RENDERERS = {"detailed": position_detailed, "compact": position_compact, "identifiers": position_identifiers}
