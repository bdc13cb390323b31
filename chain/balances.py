"""What one landed transaction did to balances, read from its own getTransaction answer
(``preBalances``/``postBalances``, ``preTokenBalances``/``postTokenBalances``, the loaded
addresses): the types the chain client answers with (chain/rpc.py) and the decoding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class TokenBalance:
    """One token account around one landed transaction, from the transaction's own
    ``preTokenBalances`` / ``postTokenBalances`` (the standard Solana JSON-RPC shape:
    accountIndex, mint, owner, programId, uiTokenAmount {amount, decimals}).

    Amounts are base units (int). An account absent from preTokenBalances was opened by the
    transaction (``opened``, ``pre`` 0); one absent from postTokenBalances was closed by it
    (``closed``, ``post`` 0). ``mint``, ``owner`` and ``program_id`` are as the transaction
    left them (as it found them for a closed account); ``owner`` / ``program_id`` are ""
    when the node omits them (old ledgers)."""

    mint: str
    owner: str
    program_id: str
    decimals: int
    pre: int
    post: int
    opened: bool = False
    closed: bool = False


@dataclass(frozen=True)
class TransactionBalances:
    """What one landed transaction did to balances, from its own metadata (one
    getTransaction): the chain's record of that transaction, not a later re-read of the
    accounts, so it stays right however late or out of order it is applied.

    - ``slot``: the slot it landed in (orders it against other transactions);
    - ``keys``: every account key in the transaction's order — the message's static keys,
      then the addresses loaded from lookup tables (writable, then read-only);
    - ``lamports``: address → (pre, post) lamports, for every key;
    - ``tokens``: token account address → TokenBalance, for every key that was a token
      account before or after it (SPL Token and Token-2022);
    - from the same answer, what Fetch Transaction Details shows (stored when the
      transaction settles): ``fee`` (lamports), ``compute_units_consumed``, ``log_messages``,
      ``block_time`` (Unix seconds) — None where the node leaves them out — and ``loaded``,
      the addresses loaded from lookup tables (``{"writable": [...], "readonly": [...]}``).
    """

    slot: int
    keys: tuple[str, ...]
    lamports: dict[str, tuple[int, int]]
    tokens: dict[str, TokenBalance]
    fee: int | None = None
    compute_units_consumed: int | None = None
    log_messages: tuple[str, ...] | None = None
    block_time: int | None = None
    loaded: dict[str, list[str]] | None = None



def balances_of(value, static_keys: Sequence[str]) -> TransactionBalances | None:
    """A getTransaction answer (json encoding) as TransactionBalances."""
    if value is None or value.transaction.meta is None:
        return None
    meta = value.transaction.meta
    keys = list(static_keys)
    loaded = None
    if meta.loaded_addresses is not None:
        loaded = {"writable": [str(k) for k in meta.loaded_addresses.writable], "readonly": [str(k) for k in meta.loaded_addresses.readonly]}
        keys += loaded["writable"] + loaded["readonly"]
    lamports = {key: (pre, post) for key, pre, post in zip(keys, meta.pre_balances, meta.post_balances)}
    pre = _token_entries(meta.pre_token_balances, keys)
    post = _token_entries(meta.post_token_balances, keys)
    tokens = {}
    for address in dict.fromkeys([*pre, *post]):
        before, after = pre.get(address), post.get(address)
        entry = after or before
        tokens[address] = TokenBalance(
            mint=str(entry.mint), owner=str(entry.owner) if entry.owner is not None else "",
            program_id=str(entry.program_id) if entry.program_id is not None else "",
            decimals=int(entry.ui_token_amount.decimals),
            pre=int(before.ui_token_amount.amount) if before is not None else 0,
            post=int(after.ui_token_amount.amount) if after is not None else 0,
            opened=before is None, closed=after is None,
        )
    logs = meta.log_messages
    return TransactionBalances(
        value.slot, tuple(keys), lamports, tokens, fee=int(meta.fee) if meta.fee is not None else None,
        compute_units_consumed=int(meta.compute_units_consumed) if meta.compute_units_consumed is not None else None,
        log_messages=tuple(logs) if logs is not None else None, block_time=int(value.block_time) if value.block_time is not None else None, loaded=loaded,
    )


def _token_entries(entries, keys: list[str]) -> dict:
    """pre/postTokenBalances by the token account's address (accountIndex into ``keys``)."""
    return {keys[e.account_index]: e for e in entries or () if e.account_index < len(keys)}
