"""Address lookup tables on chain: the program's instructions and a table's state as the
runtime judges it (docs/lookup-tables.md).

The instructions come from solders' own builders; solders 0.27.1 exposes them only in its
native module (``solders.solders``), next to the table account types it re-exports in
``solders.address_lookup_table_account``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import solders.solders as _native
from solders.account import Account
from solders.address_lookup_table_account import (
    LOOKUP_TABLE_MAX_ADDRESSES,
    LOOKUP_TABLE_META_SIZE,
    LookupTableStatusDeactivating,
    LookupTableStatusFieldless,
    SlotHashes,
)
from solders.instruction import Instruction
from solders.pubkey import Pubkey

from .builder import NOT_DEACTIVATED, _table_of
from .rpc import ChainRpc

SLOT_HASHES = Pubkey.from_string("SysvarS1otHashes111111111111111111111111111")
MAX_ADDRESSES = LOOKUP_TABLE_MAX_ADDRESSES  # 256
META_SIZE = LOOKUP_TABLE_META_SIZE  # 56 bytes before the addresses


def table_size(addresses: int) -> int:
    return META_SIZE + 32 * addresses


def create(*, authority: Pubkey, payer: Pubkey, recent_slot: int) -> tuple[Instruction, Pubkey]:
    """CreateLookupTable: the table's address follows from the authority and a recent slot
    (one the SlotHashes sysvar still holds); the payer funds the rent of its 56 bytes. The
    authority need not sign a creation."""
    return _native.create_lookup_table({"authority_address": authority, "payer_address": payer, "recent_slot": recent_slot})


def extend(*, table: Pubkey, authority: Pubkey, payer: Pubkey | None, addresses: Sequence[Pubkey]) -> Instruction:
    """ExtendLookupTable: the authority signs; the payer tops the rent up for the new size."""
    params = {"lookup_table_address": table, "authority_address": authority, "new_addresses": list(addresses)}
    if payer is not None:
        params["payer_address"] = payer
    return _native.extend_lookup_table(params)


def freeze(*, table: Pubkey, authority: Pubkey) -> Instruction:
    return _native.freeze_lookup_table({"lookup_table_address": table, "authority_address": authority})


def deactivate(*, table: Pubkey, authority: Pubkey) -> Instruction:
    return _native.deactivate_lookup_table({"lookup_table_address": table, "authority_address": authority})


def close(*, table: Pubkey, authority: Pubkey, recipient: Pubkey) -> Instruction:
    return _native.close_lookup_table({"lookup_table_address": table, "authority_address": authority, "recipient_address": recipient})


@dataclass(frozen=True)
class TableOnChain:
    """A table as the chain holds it, read at ``slot``.

    ``status``: ACTIVE (has an authority, not deactivated), FROZEN (no authority),
    DEACTIVATING (deactivated; the runtime refuses to close it for ``remaining_slots`` more
    slots: its deactivation slot must first leave the SlotHashes sysvar) or DEACTIVATED
    (closable). Without a SlotHashes read every deactivated table is DEACTIVATING with
    ``remaining_slots`` None."""

    addresses: tuple[str, ...]
    authority: str | None
    deactivation_slot: int | None
    last_extended_slot: int
    last_extended_start_index: int
    lamports: int
    status: str
    remaining_slots: int | None
    slot: int


def table_on_chain(account: Account | None, *, slot: int, slot_hashes: SlotHashes | None = None) -> TableOnChain | None:
    """``account`` as a lookup table (None when absent or not a table)."""
    table = _table_of(account)
    if table is None:
        return None
    meta = table.meta
    deactivated = meta.deactivation_slot != NOT_DEACTIVATED
    remaining = None
    if not deactivated:
        status = "ACTIVE" if meta.authority is not None else "FROZEN"
    else:
        status = "DEACTIVATING"
        if slot_hashes is not None:
            judged = meta.status(slot, slot_hashes)
            if judged == LookupTableStatusFieldless.Deactivated:
                status = "DEACTIVATED"
            elif isinstance(judged, LookupTableStatusDeactivating):
                remaining = int(judged.remaining_slots)
    return TableOnChain(
        addresses=tuple(str(a) for a in table.addresses),
        authority=str(meta.authority) if meta.authority is not None else None,
        deactivation_slot=int(meta.deactivation_slot) if deactivated else None,
        last_extended_slot=int(meta.last_extended_slot),
        last_extended_start_index=int(meta.last_extended_slot_start_index),
        lamports=int(account.lamports),
        status=status,
        remaining_slots=remaining,
        slot=slot,
    )


def read_table(rpc: ChainRpc, address: str) -> TableOnChain | None:
    """The table at ``address`` and, in the same read, the SlotHashes sysvar the runtime
    judges a deactivated table's cool-down by (one getMultipleAccounts)."""
    read = rpc.read_accounts([address, str(SLOT_HASHES)])
    sysvar = read.accounts.get(str(SLOT_HASHES))
    slot_hashes = SlotHashes.from_bytes(bytes(sysvar.data)) if sysvar is not None else None
    return table_on_chain(read.accounts.get(address), slot=read.slot, slot_hashes=slot_hashes)
