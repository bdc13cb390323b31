"""Accounts and transactions in the reference's wire encodings.

Accounts: legacy binary (a bare base-58 string: getAccountInfo's and the subscriptions'
default), base58, base64, base64+zstd and jsonParsed (parsing.py), with dataSlice.
Transactions (getTransaction, getBlock): json, jsonParsed, base58, base64, and getBlock's
transactionDetails levels.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import struct

from solders.message import MessageV0
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from ledger_project.base58 import b58encode

from .instructions import parse_instruction
from .errors import RpcError
from .parsing import parse_account

MAX_BASE58_BYTES = 128
BASE58_TOO_LARGE = "error: data too large for bs58 encoding"  # what the reference encodes then
ACCOUNT_ENCODINGS = ("binary", "base58", "base64", "base64+zstd", "jsonParsed")
TRANSACTION_ENCODINGS = ("json", "jsonParsed", "base58", "base64")
MEMO_PROGRAMS = {
    Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
    Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"),
}


def _bad(message: str) -> RpcError:
    return RpcError(-32602, f"Invalid params: {message}")


# --- zstd: the system's libzstd when present, else a frame of raw (stored) blocks -----------
def _load_zstd():
    name = ctypes.util.find_library("zstd") or "libzstd.so.1"
    try:
        lib = ctypes.CDLL(name)
        lib.ZSTD_compressBound.restype = ctypes.c_size_t
        lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        lib.ZSTD_compress.restype = ctypes.c_size_t
        lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        return lib
    except (OSError, AttributeError):
        return None


_ZSTD = _load_zstd()


def zstd_compress(data: bytes) -> bytes:
    if _ZSTD is not None:
        out = ctypes.create_string_buffer(_ZSTD.ZSTD_compressBound(len(data)))
        size = _ZSTD.ZSTD_compress(out, len(out), data, len(data), 1)
        if not _ZSTD.ZSTD_isError(size):
            return out.raw[:size]
    # RFC 8878: magic, a single-segment header with an 8-byte content size, raw blocks of at
    # most 128 KiB (a valid frame every decoder reads, uncompressed).
    frame = bytearray(struct.pack("<IB", 0xFD2FB528, 0xE0)) + struct.pack("<Q", len(data))
    chunks = [data[i:i + 131072] for i in range(0, len(data), 131072)] or [b""]
    for index, chunk in enumerate(chunks):
        header = (len(chunk) << 3) | (1 if index == len(chunks) - 1 else 0)
        frame += header.to_bytes(3, "little") + chunk
    return bytes(frame)


# --- accounts -----------------------------------------------------------------------------
def data_slice(cfg: dict) -> tuple[int, int] | None:
    raw = cfg.get("dataSlice")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), int) and raw[k] >= 0 for k in ("offset", "length")):
        raise _bad("dataSlice needs non-negative integers offset and length")
    return raw["offset"], raw["length"]


def check_encoding(encoding: str, sliced: bool) -> None:
    if encoding not in ACCOUNT_ENCODINGS:
        raise _bad(f"unknown variant `{encoding}`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`")
    if encoding == "jsonParsed" and sliced:
        raise RpcError(-32600, "Sliced account data can only be encoded using binary (base 58) or base64 encoding.")


def encode_account(pubkey: Pubkey, acc, encoding: str, sliced: tuple[int, int] | None, get_account, *, strict: bool = True) -> dict:
    """UiAccount. ``strict`` (the HTTP methods) refuses base-58 data over 128 bytes as the
    reference does; subscriptions send the reference's error string in its place."""
    raw = bytes(acc.data)
    data = raw[sliced[0]:sliced[0] + sliced[1]] if sliced else raw
    if encoding == "jsonParsed":
        parsed = parse_account(pubkey, acc, get_account)
        encoded = parsed if parsed is not None else [base64.b64encode(data).decode(), "base64"]
    elif encoding in ("binary", "base58"):
        if len(data) > MAX_BASE58_BYTES:
            if strict:
                raise RpcError(-32600, "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
            text = BASE58_TOO_LARGE
        else:
            text = b58encode(data)
        encoded = text if encoding == "binary" else [text, "base58"]
    elif encoding == "base64":
        encoded = [base64.b64encode(data).decode(), "base64"]
    elif encoding == "base64+zstd":
        encoded = [base64.b64encode(zstd_compress(data)).decode(), "base64+zstd"]
    else:
        raise _bad(f"unsupported encoding {encoding!r}")
    return {"data": encoded, "executable": acc.executable, "lamports": acc.lamports, "owner": str(acc.owner), "rentEpoch": acc.rent_epoch, "space": len(raw)}


# --- transactions -------------------------------------------------------------------------
def memo_of(raw: bytes) -> str | None:
    """The `memo` of a signature entry, as a validator formats it: "[length] text" for each
    Memo program instruction, joined by "; "."""
    message = VersionedTransaction.from_bytes(raw).message
    keys = message.account_keys
    memos = []
    for ix in message.instructions:
        if ix.program_id_index < len(keys) and keys[ix.program_id_index] in MEMO_PROGRAMS:
            data = bytes(ix.data)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = "(unparseable)"
            memos.append(f"[{len(data)}] {text}")
    return "; ".join(memos) if memos else None


def ui_transaction(tx: VersionedTransaction) -> dict:
    message = tx.message
    header = message.header
    ui = {
        "header": {"numRequiredSignatures": header.num_required_signatures, "numReadonlySignedAccounts": header.num_readonly_signed_accounts, "numReadonlyUnsignedAccounts": header.num_readonly_unsigned_accounts},
        "accountKeys": [str(k) for k in message.account_keys],
        "recentBlockhash": str(message.recent_blockhash),
        "instructions": [{"programIdIndex": ix.program_id_index, "accounts": list(ix.accounts), "data": b58encode(bytes(ix.data)), "stackHeight": None} for ix in message.instructions],
    }
    if isinstance(message, MessageV0):
        ui["addressTableLookups"] = _lookups(message)
    return {"signatures": [str(s) for s in tx.signatures], "message": ui}


def _lookups(message: MessageV0) -> list[dict]:
    return [{"accountKey": str(lk.account_key), "writableIndexes": list(lk.writable_indexes), "readonlyIndexes": list(lk.readonly_indexes)} for lk in message.address_table_lookups]


# ReservedAccountKeys (all activated): builtin programs and sysvars a message may never
# write; a validator shows them read-only whatever the header says.
RESERVED_KEYS = frozenset(Pubkey.from_string(k) for k in (
    "AddressLookupTab1e1111111111111111111111111", "BPFLoader2111111111111111111111111111111111", "BPFLoader1111111111111111111111111111111111",
    "BPFLoaderUpgradeab1e11111111111111111111111", "ComputeBudget111111111111111111111111111111", "Config1111111111111111111111111111111111111",
    "Ed25519SigVerify111111111111111111111111111", "Feature111111111111111111111111111111111111", "LoaderV411111111111111111111111111111111111",
    "NativeLoader1111111111111111111111111111111", "KeccakSecp256k11111111111111111111111111111", "Secp256r1SigVerify1111111111111111111111111",
    "Stake11111111111111111111111111111111111111", "11111111111111111111111111111111", "Vote111111111111111111111111111111111111111",
    "ZkE1Gama1Proof11111111111111111111111111111", "ZkTokenProof1111111111111111111111111111111", "Sysvar1111111111111111111111111111111111111",
    "SysvarC1ock11111111111111111111111111111111", "SysvarEpochRewards1111111111111111111111111", "SysvarEpochSchedu1e111111111111111111111111",
    "SysvarFees111111111111111111111111111111111", "Sysvar1nstructions1111111111111111111111111", "SysvarLastRestartS1ot1111111111111111111111",
    "SysvarRecentB1ockHashes11111111111111111111", "SysvarRent111111111111111111111111111111111", "SysvarRewards111111111111111111111111111111",
    "SysvarS1otHashes111111111111111111111111111", "SysvarS1otHistory11111111111111111111111111", "SysvarStakeHistory1111111111111111111111111",
))
UPGRADEABLE_LOADER = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")


def parsed_account_keys(tx: VersionedTransaction, loaded: dict) -> list[dict]:
    """accountKeys of the jsonParsed and `accounts` forms: static keys, then the ones loaded
    from lookup tables, each with its role. Writable as a validator reports it
    (Message::is_maybe_writable / LoadedMessage::is_writable): writable by the header,
    not a reserved key, and not an invoked program unless BPFLoaderUpgradeable is among the
    keys (then program ids are not demoted)."""
    message = tx.message
    header = message.header
    keys = list(message.account_keys)
    signed, n = header.num_required_signatures, len(keys)
    loaded_keys = [(Pubkey.from_string(k), kind == "writable") for kind in ("writable", "readonly") for k in loaded.get(kind, [])]
    every = keys + [k for k, _ in loaded_keys]
    invoked = {every[ix.program_id_index] for ix in message.instructions} if UPGRADEABLE_LOADER not in every else set()
    out = []
    for i, key in enumerate(keys):
        by_header = i < signed - header.num_readonly_signed_accounts or signed <= i < n - header.num_readonly_unsigned_accounts
        writable = by_header and key not in invoked and key not in RESERVED_KEYS
        out.append({"pubkey": str(key), "writable": writable, "signer": i < signed, "source": "transaction"})
    for key, by_table in loaded_keys:
        out.append({"pubkey": str(key), "writable": by_table and key not in invoked and key not in RESERVED_KEYS, "signer": False, "source": "lookupTable"})
    return out


def _parsed_transaction(tx: VersionedTransaction, loaded: dict) -> dict:
    """jsonParsed: account keys with their roles; instructions parsed as the reference parses
    them (instructions.py), the rest partially decoded (programId, accounts, data)."""
    message = tx.message
    keys = parsed_account_keys(tx, loaded)
    names = [k["pubkey"] for k in keys]
    ui = {
        "accountKeys": keys,
        "recentBlockhash": str(message.recent_blockhash),
        "instructions": [parse_instruction(names[ix.program_id_index], [names[a] for a in ix.accounts], bytes(ix.data), None) for ix in message.instructions],
    }
    if isinstance(message, MessageV0):
        ui["addressTableLookups"] = _lookups(message)
    return {"signatures": [str(s) for s in tx.signatures], "message": ui}


def _parsed_inner(inner: list[dict], names: list[str]) -> list[dict]:
    from ledger_project.base58 import b58decode

    return [{"index": group["index"], "instructions": [parse_instruction(names[ix["programIdIndex"]], [names[a] for a in ix["accounts"]], b58decode(ix["data"]), ix.get("stackHeight"))
                                                       for ix in group["instructions"]]} for group in inner]


def check_version(stored, max_version) -> None:
    version = stored.meta.get("version", "legacy")
    if version != "legacy" and (max_version is None or max_version < version):
        raise RpcError(-32015, f"Transaction version ({version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": {version}")


def encode_transaction(stored, encoding: str, *, details: str = "full", rewards: bool = True, max_version=None) -> dict:
    """{"transaction", "meta"[, "version"]} of a stored transaction (getTransaction without
    slot and blockTime; one entry of getBlock's `transactions`)."""
    check_version(stored, max_version)
    tx = VersionedTransaction.from_bytes(stored.raw)
    meta = {k: v for k, v in stored.meta.items() if k != "version"}
    status = {"Err": stored.err} if stored.err is not None else {"Ok": None}
    loaded = meta.get("loadedAddresses") or {}
    if details == "accounts":
        entry = {
            "transaction": {"signatures": [str(s) for s in tx.signatures], "accountKeys": parsed_account_keys(tx, loaded)},
            "meta": {"err": stored.err, "status": status, "fee": meta["fee"], "preBalances": meta["preBalances"], "postBalances": meta["postBalances"],
                     "preTokenBalances": meta.get("preTokenBalances", []), "postTokenBalances": meta.get("postTokenBalances", [])},
        }
        if rewards:
            entry["meta"]["rewards"] = []
    else:
        if encoding == "base64":
            encoded = [base64.b64encode(stored.raw).decode(), "base64"]
        elif encoding == "base58":
            encoded = [b58encode(stored.raw), "base58"]
        elif encoding == "json":
            encoded = ui_transaction(tx)
        elif encoding == "jsonParsed":
            encoded = _parsed_transaction(tx, loaded)
            names = [k["pubkey"] for k in encoded["message"]["accountKeys"]]
            meta["innerInstructions"] = _parsed_inner(meta.get("innerInstructions") or [], names)
            meta.pop("loadedAddresses", None)
        else:
            raise _bad(f"unsupported encoding {encoding!r}")
        meta.update({"err": stored.err, "status": status, "rewards": [] if rewards else None, "returnData": None})
        if not rewards:
            meta.pop("rewards")
        entry = {"transaction": encoded, "meta": meta}
    if max_version is not None:
        entry["version"] = stored.meta.get("version", "legacy")
    return entry


def inner_instructions(meta) -> list[dict]:
    """A LiteSVM result's inner instructions in the meta's stored (json) shape."""
    out = []
    for index, group in enumerate(meta.inner_instructions()):
        if not group:
            continue
        out.append({
            "index": index,
            "instructions": [
                {"programIdIndex": ix.program_id_index, "accounts": list(ix.accounts), "data": b58encode(bytes(ix.data)), "stackHeight": inner.stack_height()}
                for inner in group
                for ix in (inner.instruction(),)
            ],
        })
    return out
