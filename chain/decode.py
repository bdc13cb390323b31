"""Decode a stored transaction message: its accounts and its instructions (docs/transactions.md,
"Transaction details and history").

Pure: bytes in, plain data out, no cluster and no database. The message is parsed with
solders (``solders.message``: legacy or V0); each instruction is decoded for the programs
the service uses — System, SPL Token, Token-2022 (its base instructions, the extension
instructions with a fixed layout and the token-metadata interface), Associated Token
Account, Address Lookup Table, Compute Budget and Memo — following the programs' own
layouts (chain/layouts.py) and, for names, the conventions of Solana's ``jsonParsed`` encoding (instruction
types such as ``transferChecked``; account roles such as ``source``, ``mint``). Anything
else (another program, a layout this module does not know, data too short for its
layout) keeps its raw base64 data and no decoded fields.

Quantities: lamports and other counters are integers; token amounts (u64 base units) are
strings, as in ``jsonParsed`` (past 2^53 a JSON reader may round a number); addresses are
base58. Trailing bytes after a known layout are ignored, as the programs themselves do
(e.g. SPL Token reads an absent freeze authority from its option tag alone).
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Callable, Sequence

from solders.message import Message, MessageV0, from_bytes_versioned

from .layouts import (
    ADDRESS_LOOKUP_TABLE, ADDRESS_LOOKUP_TABLE_PROGRAM, ASSOCIATED_TOKEN, ASSOCIATED_TOKEN_PROGRAM, COMPUTE_BUDGET, COMPUTE_BUDGET_PROGRAM, Layout, MEMO_PROGRAM,
    MEMO_V1_PROGRAM, NotDecodable, PROGRAM_NAMES, Reader, SYSTEM, SYSTEM_PROGRAM, TOKEN, TOKEN_2022_EXTENSIONS, TOKEN_2022_PROGRAM, TOKEN_METADATA, TOKEN_PROGRAM,
)


# --- decoding ----------------------------------------------------------------------------------


def _tagged(table: dict, fmt: str) -> Callable[[bytes], tuple[Layout, Reader]]:
    def find(data: bytes):
        r = Reader(data)
        layout = table.get(r.unpack(fmt))
        if layout is None:
            raise NotDecodable("unknown instruction")
        return layout, r

    return find


def _token(extensions: bool) -> Callable[[bytes], tuple[Layout, Reader]]:
    def find(data: bytes):
        if extensions and data[:8] in TOKEN_METADATA:
            r = Reader(data)
            r.take(8)
            return TOKEN_METADATA[data[:8]], r
        r = Reader(data)
        tag = r.unpack("B")
        layout = TOKEN.get(tag) or (TOKEN_2022_EXTENSIONS.get(tag) if extensions else None)
        if isinstance(layout, dict):
            layout = layout.get(r.unpack("B"))
        if layout is None:
            raise NotDecodable("unknown instruction")
        return layout, r

    return find


def _associated(data: bytes):
    # An empty data is Create (the program's first version took no data).
    layout = ASSOCIATED_TOKEN.get(data[0] if data else 0)
    if layout is None:
        raise NotDecodable("unknown instruction")
    r = Reader(data)
    r.take(min(1, len(data)))
    return layout, r


_MEMO = Layout("memo", (), (("memo", "utf8_rest"),), "signer")


def _memo(data: bytes):
    return _MEMO, Reader(data)


_FINDERS: dict[str, Callable[[bytes], tuple[Layout, Reader]]] = {
    SYSTEM_PROGRAM: _tagged(SYSTEM, "I"),
    TOKEN_PROGRAM: _token(extensions=False),
    TOKEN_2022_PROGRAM: _token(extensions=True),
    ASSOCIATED_TOKEN_PROGRAM: _associated,
    ADDRESS_LOOKUP_TABLE_PROGRAM: _tagged(ADDRESS_LOOKUP_TABLE, "I"),
    COMPUTE_BUDGET_PROGRAM: _tagged(COMPUTE_BUDGET, "B"),
    MEMO_PROGRAM: _memo,
    MEMO_V1_PROGRAM: _memo,
}


@dataclass(frozen=True)
class AccountKey:
    """One account of a message, in the message's order: static keys, then those loaded
    from lookup tables (writable, then read-only). ``address`` is None for a loaded one
    while the chain's record of the transaction (its loaded addresses) is not known;
    ``lookup_table`` / ``lookup_index`` say where it is loaded from."""

    address: str | None
    signer: bool
    writable: bool
    lookup_table: str | None = None
    lookup_index: int | None = None

    def as_dict(self) -> dict:
        return {"onchainId": self.address, "signer": self.signer, "writable": self.writable, "lookupTable": self.lookup_table, "lookupTableIndex": self.lookup_index}


def message_of(raw: bytes) -> Message | MessageV0:
    return from_bytes_versioned(bytes(raw))


def account_keys(message: Message | MessageV0, loaded: dict | None = None) -> list[AccountKey]:
    """Every account the message names, with its signer and writable flags as the message
    declares them (a key invoked as a program is never writable, as the runtime demotes
    it). ``loaded``: ``{"writable": [...], "readonly": [...]}`` from the transaction's
    record (getTransaction ``meta.loadedAddresses``), when known."""
    header = message.header
    static = [str(k) for k in message.account_keys]
    signed, n = header.num_required_signatures, len(static)
    called = {ix.program_id_index for ix in message.instructions}
    keys = []
    for i, address in enumerate(static):
        if i < signed:
            writable = i < signed - header.num_readonly_signed_accounts
        else:
            writable = i < n - header.num_readonly_unsigned_accounts
        keys.append(AccountKey(address, i < signed, writable and i not in called))
    lookups = list(getattr(message, "address_table_lookups", None) or ())
    if lookups:
        loaded = loaded or {}
        for writable, attr, known in ((True, "writable_indexes", loaded.get("writable") or []), (False, "readonly_indexes", loaded.get("readonly") or [])):
            position = 0
            for lookup in lookups:
                for index in getattr(lookup, attr):
                    address = known[position] if position < len(known) else None
                    keys.append(AccountKey(address, False, writable and (len(keys) not in called), str(lookup.account_key), int(index)))
                    position += 1
    return keys


def decode_instruction(program_id: str, data: bytes, accounts: Sequence[AccountKey | dict], index: int = 0) -> dict:
    """One instruction: its program, type, accounts with their roles, decoded data (None
    when this module does not know the program or layout) and its raw data (base64)."""
    layout, decoded = None, None
    finder = _FINDERS.get(program_id)
    if finder is not None:
        try:
            layout, reader = finder(data)
            decoded = layout.read(reader)
        except (NotDecodable, struct.error, ValueError, IndexError):
            layout, decoded = None, None
    roles = layout.roles if layout is not None else ()
    extra = layout.extra_role if layout is not None else None
    return {
        "index": index,
        "programId": program_id,
        "programName": PROGRAM_NAMES.get(program_id),
        "instructionType": layout.name if layout is not None else None,
        "accounts": [{**(key if isinstance(key, dict) else key.as_dict()), "role": roles[i] if i < len(roles) else extra} for i, key in enumerate(accounts)],
        "data": decoded,
        "rawData": base64.b64encode(data).decode(),
    }


def decode_message(raw: bytes, loaded: dict | None = None) -> dict:
    """The accounts, instructions and lookup-table references of a serialized message
    (legacy or V0): ``{"accounts": [...], "instructions": [...], "addressTableLookups": [...]}``."""
    message = message_of(raw)
    keys = [key.as_dict() for key in account_keys(message, loaded)]
    unknown = AccountKey(None, False, False).as_dict()
    instructions = []
    for i, ix in enumerate(message.instructions):
        program = keys[ix.program_id_index]["onchainId"] if ix.program_id_index < len(keys) else None
        accounts = [keys[a] if a < len(keys) else unknown for a in bytes(ix.accounts)]
        instructions.append(decode_instruction(program or "", bytes(ix.data), accounts, i))
    lookups = [
        {"onchainId": str(lookup.account_key), "writableIndexes": list(bytes(lookup.writable_indexes)), "readonlyIndexes": list(bytes(lookup.readonly_indexes))}
        for lookup in (getattr(message, "address_table_lookups", None) or ())
    ]
    return {"accounts": keys, "instructions": instructions, "addressTableLookups": lookups}
