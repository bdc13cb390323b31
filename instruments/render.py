"""Financial instrument responses (spec: Financial instrument response; docs/instruments.md)."""

from __future__ import annotations

from accounts.render import account_detailed, uuid_text
from ledger_project.api.renderers import display_amount
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text

from .models import AUTHORITY_ROLES, authority_column
from .onchain import ChainMint, chain_fields


def unrecorded_account(address: str) -> dict:
    """An authority the service has no record of: its address, nothing offchain."""
    return {"onchain": {"id": address, "lastTransactionId": None, "lastTransactionAt": None, "creationTransactionId": None, "creationTransactionAt": None},
            "offchain": None, "managed": False, "status": None}


def token_value(base_units, decimals: int) -> dict:
    """Value of a token amount: ``amount`` in whole tokens, ``lamports`` in base units.

    ``amount`` is an exact Decimal (never float: u64 max at 9+ decimals has more digits
    than a double holds), rendered as an exact JSON number by ledger_project.api.renderers."""
    units = int(base_units or 0)
    return {"amount": display_amount(units, decimals), "lamports": units}


def account_responses(rows: dict) -> dict[int, dict]:
    """Account responses of a page's mint and authority records, each rendered once: a
    page of 100 instruments usually shares a handful of authorities."""
    return {pk: account_detailed(row) for pk, row in rows.items()}


def _authority(i, role: str, accounts: dict) -> dict | None:
    column = authority_column(role)
    account_id, address = getattr(i, f"{column}_id"), getattr(i, f"{column}_address")
    if account_id is not None and account_id in accounts:
        return accounts[account_id]
    return unrecorded_account(address) if address else None


@renders("instruments.serializers.InstrumentOutput")
def instrument_detailed(i, accounts: dict, chain: ChainMint | None = None) -> dict:
    """``accounts``: account_responses() of the related records. ``chain``: the mint as just read from the network (details); pages show the copy
    stored at the last confirmation."""
    name, symbol, uri, custom = i.name, i.symbol, i.uri, i.onchain_metadata
    decimals, paused, multiplier = i.decimals, i.paused, i.scaled_ui_multiplier
    extensions, default_state, supply = i.extensions, i.default_position_state, i.supply_onchain
    if chain is not None:
        live = chain_fields(chain)
        name, symbol, uri, custom = live.get("name", name), live.get("symbol", symbol), live.get("uri", uri), live.get("onchain_metadata", custom)
        decimals, paused, multiplier = live["decimals"], live["paused"], live["scaled_ui_multiplier"]
        extensions, default_state, supply = live["extensions"], live["default_position_state"], live["supply_onchain"]
    response = {
        "onchain": {
            "id": i.address,
            "lastTransactionId": i.last_tx_signature,
            "lastTransactionAt": timestamp_text(i.last_transaction_at),
            "creationTransactionId": i.creation_tx_signature,
            "creationTransactionAt": timestamp_text(i.creation_transaction_at),
        },
        "offchain": {
            "id": str(i.offchain_id),
            "alId": i.al_id,
            "category": i.al_category,
            "type": i.al_type,
            "lastTransactionId": uuid_text(i.last_tx_offchain),
            "creationTransactionId": uuid_text(i.creation_tx_offchain),
        },
        "alId": i.al_id,
        "mintAccount": accounts[i.mint_account_id] if i.mint_account_id in accounts else unrecorded_account(i.address),
        "version": i.version,
    }
    for role in AUTHORITY_ROLES:
        response[f"{role}Authority"] = _authority(i, role, accounts)
    response.update({
        "onchainData": {"symbol": symbol, "name": name, "decimals": decimals, "uri": uri, "simpleCustomMetadata": dict(custom or {})},
        "offchainData": dict(i.offchain_data or {}),
        "defaultPositionState": default_state,
        "extensions": list(extensions or []),
        "paused": paused,
        "scaledUiAmountMultiplier": multiplier,
        "transferHookProgram": {"onchainId": i.transfer_hook_program_address, "offchainId": uuid_text(i.transfer_hook_program_offchain_id)} if i.transfer_hook_program_address else None,
        "circulatingSupply": token_value(supply, decimals),
        "status": i.status,
        "managed": i.managed,
        "wasAlreadyOnchain": i.was_onchain_already,
        "sharedAcrossTenants": i.shared_across_tenants,
        "comments": i.comments,
        "tenantOrganizationId": i.tenant_external_id,
        "mintAccountSize": i.data_length,
    })
    return response


@renders("instruments.serializers.InstrumentCompactOutput")
def instrument_compact(i) -> dict:
    return {
        "onchain": {"id": i.address},
        "offchain": {"id": str(i.offchain_id), "alId": i.al_id},
        "version": i.version,
        "onchainData": {"symbol": i.symbol, "name": i.name, "decimals": i.decimals},
        "status": i.status,
        "managed": i.managed,
        "paused": i.paused,
        "tenantOrganizationId": i.tenant_external_id,
    }


@renders("accounts.serializers.IdentifiersOut")
def instrument_identifiers(i) -> dict:
    return {"onchainId": i.address, "offchainId": str(i.offchain_id)}
