"""The chain's view of a mint, and copying it onto the instrument record.

Onchain fields of a FinancialInstrument (authorities, extensions and their state, token
metadata, supply) are never edited by the service directly: they are read back from the
mint account after every confirmed transaction that touches it (instruments/effects.py)
and when a mint is onboarded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.utils import timezone
from solders.account import Account as ChainAccount
from solders.pubkey import Pubkey

from chain.rpc import rpc_for

from .models import FinancialInstrument, PositionState, TokenVersion
from .token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, API_EXTENSIONS
from .token2022.tlv import DecodedMint, decode_mint

PROGRAMS = {TokenVersion.SPL: TOKEN_PROGRAM_ID, TokenVersion.TOKEN_2022: TOKEN_2022_PROGRAM_ID}
_API_NAME = {ext.name: api for api, ext in API_EXTENSIONS.items()}


@dataclass(frozen=True)
class ChainMint:
    """A mint as the chain had it at ``slot`` (the slot the node answered the read at)."""

    version: str
    lamports: int
    mint: DecodedMint
    slot: int | None = None


def version_of_owner(owner: Pubkey) -> str | None:
    return next((v for v, p in PROGRAMS.items() if p == owner), None)


def read_mint(cluster: str, address: str) -> ChainMint | None:
    """The mint as the chain has it now; None when the account is absent or not a mint.
    Network: call it outside any database transaction."""
    read = rpc_for(cluster).read_accounts([address])
    return mint_from_account(read.accounts.get(address), slot=read.slot)


def mint_from_account(account: ChainAccount | None, *, slot: int | None = None) -> ChainMint | None:
    """Decode account data already read (e.g. by the confirmation prefetch) as a mint;
    None when the account is absent or not an initialized mint."""
    if account is None:
        return None
    version = version_of_owner(account.owner)
    if version is None:
        return None
    try:
        decoded = decode_mint(bytes(account.data))
    except ValueError:
        return None
    if not decoded.is_initialized:
        return None
    return ChainMint(version=version, lamports=account.lamports, mint=decoded, slot=slot)


def effective_multiplier(scaled: dict, now: float | None = None) -> float:
    """The multiplier in force: the new one once its effective timestamp has passed."""
    now = time.time() if now is None else now
    if scaled.get("newMultiplierEffectiveTimestamp", 0) <= now:
        return scaled.get("newMultiplier") or scaled.get("multiplier") or 1.0
    return scaled.get("multiplier") or 1.0


def chain_fields(chain: ChainMint) -> dict:
    """Model field values the chain determines."""
    m, ext = chain.mint, chain.mint.extensions
    metadata = ext.get("TOKEN_METADATA")
    pointer = ext.get("METADATA_POINTER") or {}
    scaled = ext.get("SCALED_UI_AMOUNT")
    hook = ext.get("TRANSFER_HOOK")
    pausable = ext.get("PAUSABLE")
    default_state = ext.get("DEFAULT_ACCOUNT_STATE")
    fields = {
        "version": chain.version,
        "decimals": m.decimals,
        "supply_onchain": m.supply,
        "data_length": m.data_length,
        "extensions": sorted(_API_NAME[name] for name in ext if name in _API_NAME),
        "default_position_state": PositionState.FROZEN if default_state and default_state["state"] == "FROZEN" else PositionState.INITIALIZED,
        "paused": pausable["paused"] if pausable else None,
        "scaled_ui_multiplier": effective_multiplier(scaled) if scaled else None,
        "transfer_hook_program_address": (hook or {}).get("programId") or "",
        "addresses": {
            "mint": m.mint_authority,
            "freeze": m.freeze_authority,
            "update": (metadata or {}).get("updateAuthority") or pointer.get("authority"),
            "permanentDelegate": (ext.get("PERMANENT_DELEGATE") or {}).get("delegate"),
            "closing": (ext.get("MINT_CLOSE_AUTHORITY") or {}).get("closeAuthority"),
            "pausable": (pausable or {}).get("authority"),
            "scaledUiAmount": (scaled or {}).get("authority"),
            "transferHook": (hook or {}).get("authority"),
            "confidentialTransfer": (ext.get("CONFIDENTIAL_TRANSFER_MINT") or {}).get("authority"),
        },
    }
    if metadata is not None:
        fields.update(name=metadata["name"], symbol=metadata["symbol"], uri=metadata["uri"], onchain_metadata=dict(metadata["additionalMetadata"]))
    return fields


def chain_state_matches(instrument: FinancialInstrument, chain: ChainMint) -> bool:
    """Whether ``instrument`` already holds what ``chain`` says (every field the chain
    determines, every authority's address, and a record for each of them): a sync would
    change nothing but the sync markers. Any difference — a type the comparison does not
    see through included — answers False, and the caller syncs."""
    from .models import authority_column

    values = chain_fields(chain)
    addresses = values.pop("addresses")
    if any(getattr(instrument, name) != value for name, value in values.items()):
        return False
    for role, address in addresses.items():
        column = authority_column(role)
        if getattr(instrument, f"{column}_address") != (address or "") or (address and getattr(instrument, f"{column}_id") is None):
            return False
    return not (values["transfer_hook_program_address"] and instrument.transfer_hook_program_id is None)


def _records_by_address(instrument: FinancialInstrument, addresses: set[str], current_ids: set[int]) -> dict:
    """The account record each address resolves to for ``instrument``'s tenant, the way a
    lookup would have: the record the instrument already points at when it still has that
    address (an authority another organization shares, named with
    otherTenantOrganizationExternalId, stays that record), else the tenant's own, else one
    shared with it whose key the service holds and the tenant may sign with
    (orgsAllowedToSignWithPrivateKey: the next update signs on platform), else any shared
    one (lowest id: deterministic)."""
    from accounts.models import Account
    from accounts.signers import can_sign_on_platform

    if not addresses:
        return {}
    tenant = instrument.tenant
    rows = Account.objects.visible_to(tenant).filter(cluster=instrument.cluster, address__in=addresses).order_by("pk")

    def rank(account: Account) -> tuple:
        whose = 0 if account.tenant_id == tenant.pk else 1 if can_sign_on_platform(account, tenant) else 2
        return (account.pk not in current_ids, whose, account.pk)

    best: dict[str, Account] = {}
    for account in rows:
        held = best.get(account.address)
        if held is None or rank(account) < rank(held):
            best[account.address] = account
    return best


def apply_chain_state(instrument: FinancialInstrument, chain: ChainMint) -> list[str]:
    """Copy the chain's state onto ``instrument`` (not saved); returns the changed field names.

    Authorities become FKs when the address resolves to a record visible to the tenant on
    this cluster (``_records_by_address``: shared records of other organizations included,
    so an authority shared across tenants survives every sync)."""
    from .models import authority_column

    values = chain_fields(chain)
    addresses = values.pop("addresses")
    hook_address = values["transfer_hook_program_address"]
    current_ids = {getattr(instrument, f"{authority_column(role)}_id") for role in addresses} | {instrument.transfer_hook_program_id}
    known = _records_by_address(instrument, {a for a in addresses.values() if a} | ({hook_address} if hook_address else set()), current_ids - {None})
    changed = []
    for name, value in values.items():
        setattr(instrument, name, value)
        changed.append(name)
    for role, address in addresses.items():
        column = authority_column(role)
        setattr(instrument, f"{column}_address", address or "")
        setattr(instrument, column, known.get(address) if address else None)
        changed += [f"{column}_address", column]
    instrument.transfer_hook_program = known.get(hook_address) if hook_address else None
    instrument.synced_at = timezone.now()
    instrument.synced_slot = chain.slot
    changed += ["transfer_hook_program", "synced_at", "synced_slot"]
    return changed
