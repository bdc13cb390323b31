"""simulateTransaction, and the data of a preflight failure, in Agave's shape.

Agave 3.x answers RpcSimulateTransactionResult (`rpc-client-types/src/response.rs`, filled
by `rpc/src/rpc.rs` simulate_transaction from the bank's TransactionSimulationResult):

    err, logs, accounts, unitsConsumed, loadedAccountsDataSize, returnData,
    innerInstructions, replacementBlockhash, fee, preBalances, postBalances,
    preTokenBalances, postTokenBalances, loadedAddresses

- `accounts`: only with the `accounts` config (`{"addresses": [...], "encoding"}`, base64 by
  default; base58 and binary are -32602 "base58 encoding not supported", more addresses
  than the transaction has keys "Too many accounts provided; max N"); one entry per
  address, its state after the simulation (or as the bank has it when the transaction did
  not touch it), null if it does not exist — every entry null when the simulation failed.
- `returnData`: `{"programId", "data": [base64, "base64"]}` of the last program that set
  some, null when none did (or set it empty).
- `innerInstructions`: only with `innerInstructions: true`, parsed as getTransaction's
  jsonParsed inner instructions are (UiInstruction::parse), else null.
- `fee`, the balances and the token balances: those of a transaction that was executed
  (succeeded or failed in an instruction); null for one refused before it ran (blockhash,
  fee payer). `loadedAddresses` always (what the message loads from lookup tables).
- `loadedAccountsDataSize`: SIMD-0186's count (see loaded_accounts_data_size).
A preflight failure's data (-32002) is the same result with accounts, innerInstructions,
replacementBlockhash, the balances and loadedAddresses null, as Agave's send_transaction
fills it.
"""

from __future__ import annotations

import base64

from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from . import admission, genesis, tokens
from .encoding import _parsed_inner, check_encoding, encode_account, inner_instructions
from .errors import RpcError
from .programs import LOADER, programdata_address

TRANSACTION_ACCOUNT_BASE_SIZE = 64  # SIMD-0186: every loaded account counts its data plus this
ADDRESS_LOOKUP_TABLE_BASE_SIZE = 8248  # SIMD-0186: every lookup table the message names


def _invalid(message: str) -> RpcError:
    return RpcError(-32602, message)


def result(err=None, logs=(), *, units=0, loaded_size=0, return_data=None, accounts=None, inner=None, replacement=None,
           fee=None, balances=(None, None), token_balances=(None, None), loaded=None) -> dict:
    return {
        "err": err, "logs": list(logs), "accounts": accounts, "unitsConsumed": units, "loadedAccountsDataSize": loaded_size,
        "returnData": return_data, "innerInstructions": inner, "replacementBlockhash": replacement, "fee": fee,
        "preBalances": balances[0], "postBalances": balances[1], "preTokenBalances": token_balances[0],
        "postTokenBalances": token_balances[1], "loadedAddresses": loaded,
    }


def return_data_of(meta) -> dict | None:
    data = meta.return_data()
    if data is None or not bytes(data.data):
        return None
    return {"programId": str(data.program_id), "data": [base64.b64encode(bytes(data.data)).decode(), "base64"]}


def loaded_accounts_data_size(keys, get_account, message) -> int:
    """SIMD-0186: 64 bytes plus the data of every account the transaction loads (its keys,
    those from lookup tables included), the program data of each BPFLoaderUpgradeable
    program among them, and 8,248 bytes per lookup table."""
    total, seen = 0, set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        acc = get_account(key)
        size = len(acc.data) if acc is not None else 0
        total += TRANSACTION_ACCOUNT_BASE_SIZE + size
        if acc is not None and acc.executable and acc.owner == LOADER:
            programdata = get_account(programdata_address(key))
            total += len(programdata.data) if programdata is not None else 0
    for _ in getattr(message, "address_table_lookups", ()):
        total += ADDRESS_LOOKUP_TABLE_BASE_SIZE
    return total


def preflight_data(err, logs, units, meta, fee: int | None, loaded_size: int) -> dict:
    """The data of a -32002 preflight failure."""
    return result(err, logs, units=units, loaded_size=loaded_size, return_data=return_data_of(meta) if meta is not None else None, fee=fee)


def check_accounts_config(cfg, key_count: int) -> tuple[list[Pubkey], str] | None:
    if cfg is None:
        return None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("addresses", []), list):
        raise _invalid("Invalid params: accounts must be {addresses, encoding}")
    encoding = cfg.get("encoding") or "base64"
    if encoding in ("binary", "base58"):
        raise _invalid("base58 encoding not supported")
    check_encoding(encoding, False)
    addresses = cfg.get("addresses") or []
    if len(addresses) > key_count:
        raise _invalid(f"Too many accounts provided; max {key_count}")
    keys = []
    for address in addresses:
        try:
            keys.append(Pubkey.from_string(address))
        except (ValueError, TypeError):
            raise _invalid("Invalid param: " + ("WrongSize" if isinstance(address, str) and len(address) not in range(32, 45) else "Invalid"))
    return keys, encoding


def simulate(node, raw: bytes, *, sig_verify: bool, replace_blockhash: bool, accounts_cfg=None, inner: bool = False) -> dict:
    try:
        tx = VersionedTransaction.from_bytes(raw)
    except ValueError as exc:
        raise RpcError(-32602, f"failed to deserialize transaction: {exc}")
    with node.lock:
        if sig_verify and not all(tx.verify_with_results()):
            raise RpcError(-32003, "Transaction signature verification failure")
        message = tx.message
        keys, writable, loaded = admission.account_keys(node.svm, message)
        wanted = check_accounts_config(accounts_cfg, len(keys))
        replacement = None
        if replace_blockhash:
            blockhash, last_valid = node.latest_blockhash()
            replacement = {"blockhash": blockhash, "lastValidBlockHeight": last_valid}
        elif not node.blockhash_valid(str(message.recent_blockhash)) and not node.nonce_ok(message, str(message.recent_blockhash)):
            return result("BlockhashNotFound", accounts=_nulls(wanted), loaded=loaded)
        runtime = node._runtime_for(message)
        before = {k: runtime.get_account(k) for k in keys}
        payer = message.account_keys[0]
        fee = node.fee(message)
        try:
            node._charge_fee(runtime, message, fee, True, str(tx.signatures[0]))
        except RpcError as exc:  # the payer cannot pay the fee: what preflight says, as a result
            return result(exc.data["err"], accounts=_nulls(wanted), replacement=replacement, loaded=loaded)
        if not sig_verify:
            runtime.with_sigverify(False)
        try:
            outcome = runtime.simulate_transaction(tx)
        finally:
            if before[payer] is not None:
                runtime.set_account(payer, before[payer])  # the prioritization fee taken for the simulation
            if not sig_verify:
                runtime.with_sigverify(True)
        failed = isinstance(outcome, FailedTransactionMetadata)
        meta = outcome.meta()
        post = {} if failed else dict(outcome.post_accounts())
        after = {}
        for key, is_writable in zip(keys, writable):
            acc = post.get(key, before[key])
            if is_writable and acc is not None and key in post and acc.lamports > 0:
                acc = genesis.with_rent_epoch(before[key], acc)
                post[key] = acc
            after[key] = acc
        if failed:  # the fee is charged all the same (what a recorded failure's meta says)
            after[payer] = _less(before[payer], fee.total)
        get_account = runtime.get_account
        return result(
            admission.err_json(outcome.err()) if failed else None,
            meta.logs(),
            units=meta.compute_units_consumed(),
            loaded_size=loaded_accounts_data_size(keys, get_account, message),
            return_data=return_data_of(meta),
            accounts=_nulls(wanted) if failed else _encoded(node, wanted, post),
            inner=_parsed_inner(inner_instructions(meta), [str(k) for k in keys]) if inner else None,
            replacement=replacement,
            fee=fee.total,
            balances=([a.lamports if a else 0 for a in before.values()], [a.lamports if a else 0 for a in after.values()]),
            token_balances=(tokens.token_balances(keys, before, get_account), tokens.token_balances(keys, after, lambda k: post.get(k) or get_account(k))),
            loaded=loaded,
        )


def _nulls(wanted) -> list | None:
    return None if wanted is None else [None] * len(wanted[0])


def _less(acc, lamports: int):
    from solders.account import Account

    if acc is None:
        return None
    return Account(max(0, acc.lamports - lamports), bytes(acc.data), acc.owner, acc.executable, acc.rent_epoch)


def _encoded(node, wanted, post: dict) -> list | None:
    """The accounts asked for after the simulation: its post-state, else the bank's (jsonParsed
    reads mints through the same overlay)."""
    if wanted is None:
        return None
    keys, encoding = wanted

    def get_account(key):
        return post[key] if key in post else node.account(key)

    out = []
    for key in keys:
        acc = get_account(key)
        out.append(None if acc is None or (key not in post and acc.lamports == 0 and not acc.executable) else encode_account(key, acc, encoding, None, get_account))
    return out
