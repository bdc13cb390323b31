"""What a validator checks of a transaction before it runs, and the shapes of what it
says when it refuses one: the account keys a message loads (static, then from its lookup
tables), a durable nonce's age, and a transaction error in the RPC's JSON form and words
(the fee and the fee payer's check: fees.py).
Functions over a LiteSVM: the node (node.py) calls them under its lock.
"""

from __future__ import annotations

import hashlib

from solders.address_lookup_table_account import AddressLookupTable
from solders.hash import Hash
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

from .errors import RpcError, transaction_error_text

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
ADVANCE_NONCE = (4).to_bytes(4, "little")


def durable_nonce_of(blockhash: Hash) -> bytes:
    """What a nonce account stores when advanced under ``blockhash`` (the runtime's
    DurableNonce::from_blockhash)."""
    return hashlib.sha256(b"DURABLE_NONCE" + bytes(blockhash)).digest()


def err_json(err) -> object:
    """A solders TransactionError in the RPC's JSON form."""
    from solders.transaction_status import TransactionStatus

    import json

    return json.loads(TransactionStatus(0, None, err, err, None).to_json())["err"]


def describe(err) -> str:
    """A transaction error (its RPC JSON form) as a validator words it: TransactionError's
    Display, e.g. "Error processing Instruction 0: invalid instruction data" (the tables:
    errors.py)."""
    return transaction_error_text(err)


def account_keys(svm, message: Message | MessageV0) -> tuple[list[Pubkey], list[bool], dict]:
    """All account keys (static + loaded from lookup tables) and which are writable."""
    keys = list(message.account_keys)
    header = message.header
    signed, n = header.num_required_signatures, len(keys)
    writable = [i < signed - header.num_readonly_signed_accounts or signed <= i < n - header.num_readonly_unsigned_accounts for i in range(n)]
    loaded = {"writable": [], "readonly": []}
    if isinstance(message, MessageV0):
        for lookup in message.address_table_lookups:
            table = svm.get_account(lookup.account_key)
            if table is None:
                raise RpcError(-32002, f"Transaction simulation failed: {describe('AddressLookupTableNotFound')}", {"err": "AddressLookupTableNotFound", "logs": []})
            addresses = AddressLookupTable.deserialize(bytes(table.data)).addresses
            try:
                loaded["writable"] += [addresses[i] for i in lookup.writable_indexes]
                loaded["readonly"] += [addresses[i] for i in lookup.readonly_indexes]
            except IndexError:
                raise RpcError(-32002, f"Transaction simulation failed: {describe('InvalidAddressLookupTableIndex')}", {"err": "InvalidAddressLookupTableIndex", "logs": []})
        keys += loaded["writable"] + loaded["readonly"]
        writable += [True] * len(loaded["writable"]) + [False] * len(loaded["readonly"])
    return keys, writable, {k: [str(a) for a in v] for k, v in loaded.items()}

def nonce_ok(svm, message, blockhash: str) -> bool:
    """A durable-nonce transaction's age check, as a validator's: the nonce account
    holds ``blockhash`` and can be advanced now. It cannot while the latest blockhash
    is the one the nonce was stored under (the stored value is derived from it): a
    validator answers BlockhashNotFound. LiteSVM would judge that by the transaction's
    own blockhash, the nonce itself, and let it through."""
    if not message.instructions:
        return False
    first = message.instructions[0]
    keys = message.account_keys
    if keys[first.program_id_index] != SYSTEM_PROGRAM or bytes(first.data)[:4] != ADVANCE_NONCE or not first.accounts:
        return False
    nonce = svm.get_account(keys[first.accounts[0]])
    if nonce is None or len(nonce.data) < 72:
        return False
    stored = bytes(nonce.data[40:72])
    return str(Hash(stored)) == blockhash and stored != durable_nonce_of(svm.latest_blockhash())
