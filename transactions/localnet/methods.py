"""Solana JSON-RPC methods of the local node, in the standard request/response shapes."""

from __future__ import annotations

import base64

from solders.message import MessageV0, from_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from ledger_project.base58 import b58decode, b58encode

from . import tokens
from .node import FINALIZED_DEPTH, Node, RpcError

VERSION = {"solana-core": "2.2.0", "feature-set": 3294202862}
SLOTS_PER_EPOCH = 432_000
MAX_SIGNATURES_FOR_ADDRESS = 1000  # a validator's MAX_GET_CONFIRMED_SIGNATURES_FOR_ADDRESS2_LIMIT
MEMO_PROGRAMS = {
    Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
    Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"),
}


def _bad(message: str) -> RpcError:
    return RpcError(-32602, f"Invalid params: {message}")


def _pubkey(value) -> Pubkey:
    try:
        return Pubkey.from_string(value)
    except (ValueError, TypeError):
        raise _bad(f"invalid pubkey {value!r}")


def _param(params: list, index: int, default=None):
    return params[index] if len(params) > index and params[index] is not None else default


def _signature(value, name: str = "signature") -> str:
    if not isinstance(value, str):
        raise RpcError(-32602, f"Invalid param: {name} must be a base-58 string")
    try:
        Signature.from_string(value)
    except ValueError as exc:
        raise RpcError(-32602, f"Invalid param: {exc}")
    return value


def _config(params: list, index: int) -> dict:
    cfg = _param(params, index, {})
    if not isinstance(cfg, dict):
        raise _bad("configuration must be an object")
    return cfg


class Methods:
    def __init__(self, node: Node):
        self.node = node

    def dispatch(self, method: str, params) -> object:
        if params is None:
            params = []
        if not isinstance(params, list):
            raise _bad("params must be an array")
        handler = getattr(self, f"rpc_{method}", None) if isinstance(method, str) else None
        if handler is None:
            raise RpcError(-32601, "Method not found")
        try:
            return handler(params)
        except RpcError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise _bad(str(exc))

    def _context(self) -> dict:
        return {"slot": self.node.slot, "apiVersion": VERSION["solana-core"]}

    def _with_context(self, value) -> dict:
        return {"context": self._context(), "value": value}

    # --- cluster --------------------------------------------------------------------------
    def rpc_getVersion(self, params):
        return VERSION

    def rpc_getHealth(self, params):
        return "ok"

    def rpc_getGenesisHash(self, params):
        return self.node.genesis_hash

    def rpc_getSlot(self, params):
        return self.node.slot

    def rpc_localnetWarpSlots(self, params):
        """Not a Solana method: advance the slot clock by params[0] slots (1..10000) at once
        and answer the new slot (docs/localnet.md, "Slots and blockhashes")."""
        count = _param(params, 0)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10_000:
            raise _bad("expected a number of slots from 1 to 10000")
        return self.node.warp(count)

    def rpc_getBlockHeight(self, params):
        return self.node.slot

    def rpc_getEpochInfo(self, params):
        slot = self.node.slot
        return {"absoluteSlot": slot, "blockHeight": slot, "epoch": slot // SLOTS_PER_EPOCH, "slotIndex": slot % SLOTS_PER_EPOCH, "slotsInEpoch": SLOTS_PER_EPOCH, "transactionCount": self.node.transaction_count}

    def rpc_getLatestBlockhash(self, params):
        blockhash, last_valid = self.node.latest_blockhash()
        return self._with_context({"blockhash": blockhash, "lastValidBlockHeight": last_valid})

    def rpc_isBlockhashValid(self, params):
        if not params or not isinstance(params[0], str):
            raise _bad("expected a blockhash")
        return self._with_context(self.node.blockhash_valid(params[0]))

    def rpc_getFeeForMessage(self, params):
        if not params or not isinstance(params[0], str):
            raise _bad("expected a base64 message")
        message = from_bytes_versioned(base64.b64decode(params[0]))
        if not self.node.blockhash_valid(str(message.recent_blockhash)) and not self.node._nonce_ok(message, str(message.recent_blockhash)):
            return self._with_context(None)
        return self._with_context(self.node._fee(message)[0])

    def rpc_getRecentPrioritizationFees(self, params):
        addresses = _param(params, 0, [])
        if len(addresses) > 128:
            raise _bad("too many addresses (max 128)")
        return self.node.prioritization_fees([str(_pubkey(a)) for a in addresses])

    def rpc_getMinimumBalanceForRentExemption(self, params):
        size = _param(params, 0)
        if not isinstance(size, int) or size < 0:
            raise _bad("expected a data length")
        return self.node.minimum_balance(size)

    # --- accounts -------------------------------------------------------------------------
    def _encode_account(self, acc, cfg: dict):
        if acc is None:
            return None
        encoding = cfg.get("encoding", "base58" if cfg.get("_default58") else "base64")
        data = bytes(acc.data)
        data_slice = cfg.get("dataSlice")
        if data_slice:
            offset, length = int(data_slice.get("offset", 0)), int(data_slice.get("length", 0))
            data = data[offset: offset + length]
        if encoding == "jsonParsed":
            parsed = tokens.parsed(acc, self.node.account) if not data_slice else None
            encoded = parsed if parsed is not None else [base64.b64encode(data).decode(), "base64"]
        elif encoding == "base64":
            encoded = [base64.b64encode(data).decode(), "base64"]
        elif encoding == "base58":
            if len(data) > 128:
                raise RpcError(-32600, "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
            encoded = [b58encode(data), "base58"]
        else:
            raise _bad(f"unsupported encoding {encoding!r}")
        return {"data": encoded, "executable": acc.executable, "lamports": acc.lamports, "owner": str(acc.owner), "rentEpoch": acc.rent_epoch, "space": len(acc.data)}

    def rpc_getBalance(self, params):
        acc = self.node.account(_pubkey(_param(params, 0)))
        return self._with_context(acc.lamports if acc else 0)

    def rpc_getAccountInfo(self, params):
        cfg = _config(params, 1)
        if "encoding" not in cfg:
            cfg = {**cfg, "_default58": True}
        return self._with_context(self._encode_account(self.node.account(_pubkey(_param(params, 0))), cfg))

    def rpc_getMultipleAccounts(self, params):
        keys = _param(params, 0, [])
        if not isinstance(keys, list) or len(keys) > 100:
            raise _bad("expected at most 100 pubkeys")
        cfg = _config(params, 1)
        if "encoding" not in cfg:
            cfg = {**cfg, "_default58": True}
        return self._with_context([self._encode_account(self.node.account(_pubkey(k)), cfg) for k in keys])

    def _matches(self, acc, filters: list) -> bool:
        data = bytes(acc.data)
        for flt in filters:
            if "dataSize" in flt:
                if len(data) != int(flt["dataSize"]):
                    return False
            elif "memcmp" in flt:
                memcmp = flt["memcmp"]
                raw = memcmp["bytes"]
                wanted = base64.b64decode(raw) if memcmp.get("encoding") == "base64" else b58decode(raw)
                offset = int(memcmp.get("offset", 0))
                if data[offset: offset + len(wanted)] != wanted:
                    return False
            elif "tokenAccountState" in flt:
                if not tokens.is_token_account(acc):
                    return False
            else:
                raise _bad(f"unknown filter {flt!r}")
        return True

    def _owned_by(self, program: Pubkey):
        for stored in self.node.store.accounts_by_owner(str(program)):
            acc = self.node.account(Pubkey.from_string(stored))
            if acc is not None and acc.owner == program:
                yield stored, acc

    def rpc_getProgramAccounts(self, params):
        program = _pubkey(_param(params, 0))
        cfg = _config(params, 1)
        filters = cfg.get("filters") or []
        if len(filters) > 4:
            raise _bad("too many filters (max 4)")
        cfg.setdefault("encoding", "base64" if cfg.get("encoding") is None else cfg["encoding"])
        items = [{"pubkey": key, "account": self._encode_account(acc, cfg)} for key, acc in self._owned_by(program) if self._matches(acc, filters)]
        return self._with_context(items) if cfg.get("withContext") else items

    def _token_account(self, key):
        acc = self.node.account(_pubkey(key))
        if not tokens.is_token_account(acc):
            raise _bad("Invalid param: not a Token account")
        return acc

    def rpc_getTokenAccountBalance(self, params):
        acc = self._token_account(_param(params, 0))
        mint = self.node.account(Pubkey(bytes(acc.data[0:32])))
        return self._with_context(tokens.ui_amount(tokens.u64(acc.data, 64), tokens.mint_decimals(mint) if mint else 0))

    def rpc_getTokenSupply(self, params):
        acc = self.node.account(_pubkey(_param(params, 0)))
        if not tokens.is_mint(acc):
            raise _bad("Invalid param: not a Token mint")
        return self._with_context(tokens.ui_amount(tokens.u64(acc.data, 36), tokens.mint_decimals(acc)))

    def rpc_getTokenAccountsByOwner(self, params):
        owner = _pubkey(_param(params, 0))
        selector = _param(params, 1)
        if not isinstance(selector, dict) or not ({"mint", "programId"} & set(selector)):
            raise _bad("expected {mint} or {programId}")
        cfg = _config(params, 2)
        cfg.setdefault("encoding", "base64" if cfg.get("encoding") is None else cfg["encoding"])
        if "mint" in selector:
            mint = _pubkey(selector["mint"])
            mint_acc = self.node.account(mint)
            if mint_acc is None:
                raise _bad("Invalid param: could not find mint")
            programs, wanted_mint = [mint_acc.owner], bytes(mint)
        else:
            program = _pubkey(selector["programId"])
            if program not in tokens.TOKEN_PROGRAMS:
                raise _bad("Invalid param: unrecognized Token program id")
            programs, wanted_mint = [program], None
        items = []
        for program in programs:
            for key, acc in self._owned_by(program):
                if tokens.is_token_account(acc) and bytes(acc.data[32:64]) == bytes(owner) and (wanted_mint is None or bytes(acc.data[0:32]) == wanted_mint):
                    items.append({"pubkey": key, "account": self._encode_account(acc, cfg)})
        return self._with_context(items)

    # --- transactions ---------------------------------------------------------------------
    @staticmethod
    def _decode_tx(params) -> bytes:
        if not params or not isinstance(params[0], str):
            raise _bad("expected an encoded transaction")
        cfg = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        encoding = cfg.get("encoding", "base58")
        try:
            if encoding == "base64":
                return base64.b64decode(params[0], validate=True)
            if encoding == "base58":
                return b58decode(params[0])
        except ValueError as exc:
            raise _bad(f"invalid {encoding}: {exc}")
        raise _bad(f"unsupported encoding {encoding!r}")

    def rpc_sendTransaction(self, params):
        raw = self._decode_tx(params)
        cfg = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        outcome = self.node.execute(raw, preflight=not cfg.get("skipPreflight", False))
        return outcome.signature

    def rpc_simulateTransaction(self, params):
        raw = self._decode_tx(params)
        cfg = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        if cfg.get("sigVerify") and cfg.get("replaceRecentBlockhash"):
            raise _bad("sigVerify may not be used with replaceRecentBlockhash")
        value = self.node.simulate(raw, sig_verify=bool(cfg.get("sigVerify")), replace_blockhash=bool(cfg.get("replaceRecentBlockhash")))
        return self._with_context(value)

    def rpc_requestAirdrop(self, params):
        lamports = _param(params, 1)
        if not isinstance(lamports, int) or lamports <= 0:
            raise _bad("expected lamports")
        return self.node.airdrop(_pubkey(_param(params, 0)), lamports)

    def rpc_getSignatureStatuses(self, params):
        signatures = _param(params, 0, [])
        if not isinstance(signatures, list) or len(signatures) > 256:
            raise _bad("expected at most 256 signatures")
        found = self.node.store.statuses([str(s) for s in signatures])
        out = []
        for sig in signatures:
            hit = found.get(sig)
            if hit is None:
                out.append(None)
                continue
            slot, err = hit
            confirmations, level = self.node.confirmation(slot)
            out.append({"slot": slot, "confirmations": confirmations, "err": err, "status": {"Err": err} if err is not None else {"Ok": None}, "confirmationStatus": level})
        return self._with_context(out)

    def _history_slot(self, cfg: dict) -> int:
        """Highest slot a history read (getSignaturesForAddress, getTransaction) may see.

        As on a validator: `finalized` (the default) sees only finalized slots, here
        FINALIZED_DEPTH behind the tip; `confirmed` sees every executed slot (one node:
        processed = confirmed); `processed` is refused for these methods."""
        commitment = cfg.get("commitment") or "finalized"
        if commitment == "processed":
            raise RpcError(-32602, "Method does not support commitment below `confirmed`")
        if commitment not in ("confirmed", "finalized"):
            raise _bad(f"unknown commitment {commitment!r}")
        return self.node.slot if commitment == "confirmed" else self.node.slot - FINALIZED_DEPTH

    def _signature_info(self, tx) -> dict:
        _, level = self.node.confirmation(tx.slot)
        return {"signature": tx.signature, "slot": tx.slot, "err": tx.err, "memo": _memo(tx.raw), "blockTime": tx.block_time, "confirmationStatus": level}

    def rpc_getSignaturesForAddress(self, params):
        address = str(_pubkey(_param(params, 0)))
        cfg = _config(params, 1)
        limit = cfg.get("limit")
        limit = MAX_SIGNATURES_FOR_ADDRESS if limit is None else limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SIGNATURES_FOR_ADDRESS:
            raise RpcError(-32602, f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")
        before = _signature(cfg["before"], "before") if cfg.get("before") is not None else None
        until = _signature(cfg["until"], "until") if cfg.get("until") is not None else None
        highest = self._history_slot(cfg)
        min_context = cfg.get("minContextSlot")
        if min_context is not None and min_context > highest:
            raise RpcError(-32016, "Minimum context slot has not been reached", {"contextSlot": highest})
        store = self.node.store
        before_seq = until_seq = None
        if before is not None:
            # A validator answers nothing when `before` is not in its ledger (at this
            # commitment): it does not restart from the newest signature.
            found = store.transaction(before)
            if found is None or found.slot > highest:
                return []
            before_seq = found.seq
        if until is not None:
            found = store.transaction(until)  # unknown `until`: search to the oldest
            until_seq = found.seq if found is not None else None
        rows = store.signatures_for_address(address, limit=limit, before_seq=before_seq, until_seq=until_seq, max_slot=highest)
        return [self._signature_info(tx) for tx in rows]

    def rpc_getTransaction(self, params):
        signature = _signature(_param(params, 0))
        cfg = params[1] if len(params) > 1 and isinstance(params[1], dict) else {"encoding": params[1]} if len(params) > 1 and isinstance(params[1], str) else {}
        highest = self._history_slot(cfg)
        tx = self.node.store.transaction(signature)
        if tx is None or tx.slot > highest:
            return None
        version = tx.meta.get("version", "legacy")
        if version != "legacy" and cfg.get("maxSupportedTransactionVersion") is None:
            raise RpcError(-32015, "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0")
        encoding = cfg.get("encoding") or "json"
        if encoding == "base64":
            encoded = [base64.b64encode(tx.raw).decode(), "base64"]
        elif encoding == "base58":
            encoded = [b58encode(tx.raw), "base58"]
        elif encoding in ("json", "jsonParsed"):
            encoded = _ui_transaction(VersionedTransaction.from_bytes(tx.raw))
        else:
            raise _bad(f"unsupported encoding {encoding!r}")
        meta = {k: v for k, v in tx.meta.items() if k != "version"}
        meta.update({"err": tx.err, "status": {"Err": tx.err} if tx.err is not None else {"Ok": None}, "rewards": [], "returnData": None})
        result = {"slot": tx.slot, "blockTime": tx.block_time, "transaction": encoded, "meta": meta}
        if cfg.get("maxSupportedTransactionVersion") is not None:
            result["version"] = version
        return result


def _memo(raw: bytes) -> str | None:
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


def _ui_transaction(tx: VersionedTransaction) -> dict:
    message = tx.message
    header = message.header
    ui = {
        "header": {"numRequiredSignatures": header.num_required_signatures, "numReadonlySignedAccounts": header.num_readonly_signed_accounts, "numReadonlyUnsignedAccounts": header.num_readonly_unsigned_accounts},
        "accountKeys": [str(k) for k in message.account_keys],
        "recentBlockhash": str(message.recent_blockhash),
        "instructions": [{"programIdIndex": ix.program_id_index, "accounts": list(ix.accounts), "data": b58encode(bytes(ix.data)), "stackHeight": None} for ix in message.instructions],
    }
    if isinstance(message, MessageV0):
        ui["addressTableLookups"] = [{"accountKey": str(lk.account_key), "writableIndexes": list(lk.writable_indexes), "readonlyIndexes": list(lk.readonly_indexes)} for lk in message.address_table_lookups]
    return {"signatures": [str(s) for s in tx.signatures], "message": ui}

