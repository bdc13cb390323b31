"""blockSubscribe: a blockNotification per block, as Agave's PubSub serves it when the
validator runs with `--rpc-pubsub-enable-block-subscription` (agave `rpc/src/rpc_pubsub.rs`
block_subscribe, `rpc_subscriptions.rs` filter_block_result_txs and notify_watchers;
docs/localnet-pubsub.md).

- Params: a filter, `"all"` or `{"mentionsAccountOrProgram": "<pubkey>"}`, and a config
  `{commitment, encoding, transactionDetails, showRewards, maxSupportedTransactionVersion}`.
  As Agave's: commitment `finalized` by default and at least `confirmed` (`processed` is
  -32602 "Method does not support commitment below `confirmed`"), encoding base64 by
  default (getBlock's default is json), transactionDetails full, showRewards false.
- When: a `confirmed` subscription hears of slot S's block when slot S + 1 starts (the
  block is complete and, one node, confirmed at once); a `finalized` one when S becomes
  the root. Every block from the first one after the subscription on, in slot order, as
  Agave notifies every slot between the last one notified and the newly confirmed one.
- What: `{"context": {"slot": S}, "value": {"slot": S, "block": <getBlock(S) with those
  options>, "err": null}}` — the block encoded by getBlock's own encoder
  (methods_history.encode_block). With `mentionsAccountOrProgram`, only the transactions
  whose account keys (static or loaded from a lookup table) include the address, and no
  notification for a block with none of them. A transaction newer than
  maxSupportedTransactionVersion makes it `{"block": null, "err":
  {"UnsupportedTransactionVersion": 0}}`, a block the node does not have (slots of a
  version-1 data directory before its upgrade) `"err": "BlockStoreError"`
  (RpcBlockUpdateError). Agave sends such an error again at its next trigger (it retries
  transient blockstore errors); here it is sent once: neither error goes away by waiting.
"""

from __future__ import annotations

from solders.pubkey import Pubkey

from .errors import RpcError
from .methods_history import block_options, encode_block
from .rpcutil import at_least_confirmed, commitment, param


def _invalid_mentions() -> RpcError:
    return RpcError(-32602, "Invalid Request: Invalid mentions_account_or_program provided")


def subscription_options(params) -> dict:
    """A blockSubscribe request's filter and config, refused as Agave refuses them."""
    what = param(params, 0)
    if what == "all":
        mentions = None
    elif isinstance(what, dict) and set(what) == {"mentionsAccountOrProgram"}:
        try:
            mentions = str(Pubkey.from_string(what["mentionsAccountOrProgram"]))
        except (ValueError, TypeError):
            raise _invalid_mentions()
    else:  # serde's words for an enum it cannot read
        raise RpcError(-32602, f"Invalid params: unknown variant `{what}`, expected `all` or `mentionsAccountOrProgram`")
    cfg = param(params, 1, {}) or {}
    if not isinstance(cfg, dict):
        raise RpcError(-32602, "Invalid params: configuration must be an object")
    level = commitment(cfg)
    at_least_confirmed(level)
    options = block_options(cfg, default_encoding="base64", rewards=bool(cfg.get("showRewards")))
    return {"level": level, "options": (mentions, options)}


def _account_keys(tx) -> set[str]:
    from solders.transaction import VersionedTransaction

    loaded = tx.meta.get("loadedAddresses") or {}
    keys = {str(k) for k in VersionedTransaction.from_bytes(tx.raw).message.account_keys}
    return keys | set(loaded.get("writable", ())) | set(loaded.get("readonly", ()))


class BlockFeed:
    """The block subscriptions of a hub (pubsub.Hub) and their notifications."""

    def __init__(self, node):
        self.node = node
        self.subs: dict[int, object] = {}  # id → pubsub.Subscription

    def slot_advanced(self, parent: int, previous_root: int, root: int) -> None:
        """Slot parent + 1 has started: the parent's block is complete (confirmed), and the
        slots previous_root + 1 … root are finalized."""
        if not self.subs:
            return
        confirmed = [sub for sub in self.subs.values() if sub.level == "confirmed"]
        finalized = [sub for sub in self.subs.values() if sub.level == "finalized"]
        if confirmed and parent >= 1:
            self._notify(parent, confirmed)
        if finalized:
            for slot in range(max(previous_root + 1, 1), root + 1):
                self._notify(slot, finalized)

    def _notify(self, slot: int, subs: list) -> None:
        block = self.node.store.block(slot)
        if block is None:
            for sub in subs:
                sub.notify({"context": {"slot": slot}, "value": {"slot": slot, "block": None, "err": "BlockStoreError"}})
            return
        transactions = self.node.store.block_transactions(block)
        keys: list[set[str]] | None = None
        cache: dict = {}  # (mentions, options) → the notification's value, or None
        for sub in subs:
            ident = sub.options
            mentions, options = ident
            if ident not in cache:
                kept = transactions
                if mentions is not None:
                    keys = keys if keys is not None else [_account_keys(tx) for tx in transactions]
                    kept = [tx for tx, tx_keys in zip(transactions, keys) if mentions in tx_keys]
                if mentions is not None and not kept:
                    cache[ident] = None  # nothing of the address in this block: no notification
                else:
                    try:
                        cache[ident] = {"slot": slot, "block": encode_block(block, kept, options), "err": None}
                    except RpcError as exc:
                        if exc.code != -32015:
                            raise
                        version = max(tx.meta.get("version") for tx in kept if tx.meta.get("version", "legacy") != "legacy")
                        cache[ident] = {"slot": slot, "block": None, "err": {"UnsupportedTransactionVersion": version}}
            value = cache[ident]
            if value is not None:
                sub.notify({"context": {"slot": slot}, "value": value})
