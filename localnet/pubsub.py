"""PubSub subscriptions of the local node, with the reference's messages (rpc_pubsub.rs).

accountSubscribe, programSubscribe (dataSize / memcmp filters, every account encoding),
signatureSubscribe (enableReceivedNotification), logsSubscribe (all, allWithVotes,
mentions of one address), slotSubscribe, slotsUpdatesSubscribe, rootSubscribe,
blockSubscribe (when enabled: pubsub_blocks.py) and their unsubscribes.

When notifications go out (docs/localnet-pubsub.md):
- `processed` and `confirmed`: right after the group commit that made the change durable
  (GroupCommit listeners), one per account and commit with its latest state;
- `finalized`: when the slot of the change becomes the root, FINALIZED_DEPTH slots later,
  with the state at the root;
- slot, slots-updates and root notifications when a slot starts (after its row is
  committed): for slotsUpdates, what a single leader's slot advance implies, in Agave's
  order per slot (createdBank, completed, frozen, optimisticConfirmation, root); block
  notifications then too (pubsub_blocks.py).
A signature that landed before it was subscribed to is notified at once (the reference
would stay silent; with a node that confirms within the request, send-then-subscribe
clients would otherwise wait forever). Subscriptions per connection and the size of an
incoming message are bounded (settings, docs/localnet-pubsub.md).
"""

from __future__ import annotations

import json
import logging
import time

from solders.account import Account
from solders.pubkey import Pubkey

from . import tokens
from .encoding import ACCOUNT_ENCODINGS, data_slice, encode_account
from .methods_accounts import AccountMethods
from .pubsub_blocks import BlockFeed, subscription_options as block_subscription_options
from .errors import RpcError
from .parsing import SYSTEM_PROGRAM
from .rpcutil import bad, commitment, param, signature
from .store import PendingWrite

logger = logging.getLogger("ledger.localnet.pubsub")
MAX_SUBSCRIPTIONS_PER_CONNECTION = 1000
MAX_MESSAGE_BYTES = 4096  # a validator's PubSub limit on incoming messages
MAX_BUFFERED_BYTES = 16 * 1024 * 1024
_EMPTY = Account(0, b"", SYSTEM_PROGRAM, False, 0)  # what the reference sends for a closed account
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class Subscription:
    __slots__ = ("id", "conn", "method", "key", "level", "encoding", "sliced", "filters", "options", "received", "landed")

    def __init__(self, sid: int, conn, method: str, key=None, level: str = "finalized", **extra):
        self.id, self.conn, self.method, self.key, self.level = sid, conn, method, key, level
        self.encoding = extra.get("encoding")
        self.sliced = extra.get("sliced")
        self.filters = extra.get("filters") or []
        self.options = extra.get("options")  # blockSubscribe's filter and block options
        self.received = extra.get("received", False)
        self.landed = None

    def notify(self, result) -> None:
        self.conn.send(_dumps({"jsonrpc": "2.0", "method": self.method, "params": {"result": result, "subscription": self.id}}))


def _invalid_request(what: str) -> RpcError:
    return RpcError(-32602, f"Invalid Request: Invalid {what} provided")


class Hub:
    def __init__(self, node, *, max_subscriptions: int = MAX_SUBSCRIPTIONS_PER_CONNECTION, max_message_bytes: int = MAX_MESSAGE_BYTES, max_buffered_bytes: int = MAX_BUFFERED_BYTES,
                 enable_block_subscription: bool = False):
        self.node = node
        # Off unless asked for, as Agave's --rpc-pubsub-enable-block-subscription.
        self.enable_block_subscription = enable_block_subscription
        self.max_subscriptions = max_subscriptions
        self.max_message_bytes = max_message_bytes
        self.max_buffered_bytes = max_buffered_bytes
        self.connections: set = set()
        self.next_id = 0
        self.subs: dict[int, Subscription] = {}
        # indexes: key → {id: subscription}
        self.accounts: dict[str, dict[int, Subscription]] = {}
        self.programs: dict[str, dict[int, Subscription]] = {}
        self.signatures: dict[str, dict[int, Subscription]] = {}
        self.mentions: dict[str, dict[int, Subscription]] = {}
        self.logs: dict[int, Subscription] = {}
        self.slots: dict[int, Subscription] = {}
        self.slot_updates: dict[int, Subscription] = {}
        self.roots: dict[int, Subscription] = {}
        self.blocks = BlockFeed(node)
        self.pending_final: dict[int, list[Subscription]] = {}  # slot → landed, waiting for the root
        self.last_root = node.root()
        node.commits.listeners.append(self.committed)
        node.slot_listeners.append(self)

    # --- requests -------------------------------------------------------------------------
    def received(self, conn, message: bytes) -> None:
        try:
            payload = json.loads(message)
        except ValueError:
            conn.send(_dumps({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": None}))
            return
        after: list = []
        if isinstance(payload, list):
            answers = [a for a in (self._one(conn, item, after) for item in payload) if a is not None]
            if answers or not payload:
                conn.send(_dumps(answers or {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}, "id": None}))
        else:
            answer = self._one(conn, payload, after)
            if answer is not None:
                conn.send(_dumps(answer))
        for notify in after:  # notifications due at once go after the subscription's id
            notify()

    def _one(self, conn, request, after: list) -> dict | None:
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
            return {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}, "id": request.get("id") if isinstance(request, dict) else None}
        if "id" not in request:
            return None  # a JSON-RPC notification (a client's keep-alive "ping") gets no answer
        rid, method, params = request["id"], request["method"], request.get("params") or []
        try:
            if not isinstance(params, list):
                raise bad("params must be an array")
            if method in ("blockSubscribe", "blockUnsubscribe") and not self.enable_block_subscription:
                raise RpcError(-32601, "Method not found")
            if method in _UNSUBSCRIBE:
                result = self._unsubscribe(conn, params)
            elif method == "getVersion":
                from .methods import VERSION

                result = VERSION
            else:
                handler = getattr(self, f"_sub_{method}", None)
                if handler is None:
                    raise RpcError(-32601, "Method not found")
                if len(conn.subscriptions) >= self.max_subscriptions:
                    raise RpcError(-32603, f"Internal Error: Subscription refused. Connection subscription limit reached ({self.max_subscriptions})")
                result = handler(conn, params, after)
            return {"jsonrpc": "2.0", "result": result, "id": rid}
        except RpcError as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return {"jsonrpc": "2.0", "error": error, "id": rid}
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            return {"jsonrpc": "2.0", "error": {"code": -32602, "message": f"Invalid params: {exc}"}, "id": rid}

    def _add(self, conn, method: str, index: dict | None, key, **kwargs) -> Subscription:
        sub = Subscription(self.next_id, conn, method, key, **kwargs)
        self.next_id += 1
        self.subs[sub.id] = sub
        conn.subscriptions[sub.id] = sub
        if index is not None:
            (index.setdefault(key, {}) if key is not None else index)[sub.id] = sub
        return sub

    def _remove(self, sub: Subscription) -> None:
        self.subs.pop(sub.id, None)
        sub.conn.subscriptions.pop(sub.id, None)
        for index in (self.accounts, self.programs, self.signatures, self.mentions):
            group = index.get(sub.key) if isinstance(sub.key, str) else None
            if group is not None and sub.id in group:
                del group[sub.id]
                if not group:
                    del index[sub.key]
        for flat in (self.logs, self.slots, self.slot_updates, self.roots, self.blocks.subs):
            flat.pop(sub.id, None)

    def _unsubscribe(self, conn, params) -> bool:
        sid = param(params, 0)
        sub = conn.subscriptions.get(sid) if isinstance(sid, int) and not isinstance(sid, bool) else None
        if sub is None:
            raise RpcError(-32602, "Invalid subscription id.")
        self._remove(sub)
        return True

    def disconnected(self, conn) -> None:
        self.connections.discard(conn)
        for sub in list(conn.subscriptions.values()):
            self._remove(sub)

    @staticmethod
    def _options(params, index: int) -> dict:
        cfg = param(params, index, {})
        if not isinstance(cfg, dict):
            raise bad("configuration must be an object")
        return cfg

    def _account_options(self, cfg: dict) -> dict:
        encoding = cfg.get("encoding") or "binary"
        if encoding not in ACCOUNT_ENCODINGS:
            raise bad(f"unknown variant `{encoding}`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`")
        return {"level": commitment(cfg), "encoding": encoding, "sliced": data_slice(cfg)}

    # --- subscribe --------------------------------------------------------------------------
    def _sub_accountSubscribe(self, conn, params, after) -> int:
        try:
            key = str(Pubkey.from_string(params[0]))
        except (ValueError, TypeError, IndexError):
            raise _invalid_request("pubkey")
        return self._add(conn, "accountNotification", self.accounts, key, **self._account_options(self._options(params, 1))).id

    def _sub_programSubscribe(self, conn, params, after) -> int:
        try:
            key = str(Pubkey.from_string(params[0]))
        except (ValueError, TypeError, IndexError):
            raise _invalid_request("pubkey")
        cfg = self._options(params, 1)
        filters = AccountMethods._check_filters(cfg.get("filters") or [])
        return self._add(conn, "programNotification", self.programs, key, filters=filters, **self._account_options(cfg)).id

    def _sub_signatureSubscribe(self, conn, params, after) -> int:
        try:
            sig = signature(params[0])
        except (RpcError, IndexError):
            raise _invalid_request("signature")
        cfg = self._options(params, 1)
        sub = self._add(conn, "signatureNotification", self.signatures, sig, level=commitment(cfg), received=bool(cfg.get("enableReceivedNotification")))
        landed = self.node.store.statuses([sig]).get(sig)
        if landed is not None:
            self._landed(sub, landed[0], landed[1], after)
        return sub.id

    def _sub_logsSubscribe(self, conn, params, after) -> int:
        what = param(params, 0)
        cfg = self._options(params, 1)
        level = commitment(cfg)
        if what in ("all", "allWithVotes"):  # no vote transactions here: the two are the same
            return self._add(conn, "logsNotification", self.logs, None, level=level).id
        if isinstance(what, dict) and isinstance(what.get("mentions"), list):
            if len(what["mentions"]) != 1:
                raise RpcError(-32602, "Invalid Request: Only 1 address supported")
            try:
                key = str(Pubkey.from_string(what["mentions"][0]))
            except (ValueError, TypeError):
                raise _invalid_request("mentions")
            return self._add(conn, "logsNotification", self.mentions, key, level=level).id
        raise bad("unknown variant, expected `all`, `allWithVotes` or {\"mentions\": [address]}")

    def _sub_slotSubscribe(self, conn, params, after) -> int:
        return self._add(conn, "slotNotification", self.slots, None).id

    def _sub_slotsUpdatesSubscribe(self, conn, params, after) -> int:
        return self._add(conn, "slotsUpdatesNotification", self.slot_updates, None).id

    def _sub_rootSubscribe(self, conn, params, after) -> int:
        return self._add(conn, "rootNotification", self.roots, None).id

    def _sub_blockSubscribe(self, conn, params, after) -> int:
        return self._add(conn, "blockNotification", self.blocks.subs, None, **block_subscription_options(params)).id

    # --- notifications: transactions committed ----------------------------------------------
    def _landed(self, sub: Subscription, slot: int, err, after: list | None = None) -> None:
        """A signature subscription's transaction is durable in ``slot``: notify now, or
        when the slot is rooted for `finalized`."""
        if sub.level == "finalized" and slot > self.node.root():
            sub.landed = err
            self.pending_final.setdefault(slot, []).append(sub)
            return
        result = {"context": {"slot": slot}, "value": {"err": err}}

        def notify():
            if sub.id in self.subs:
                sub.notify(result)
                self._remove(sub)  # a signature subscription ends with its notification
        after.append(notify) if after is not None else notify()

    def committed(self, batch: list[PendingWrite]) -> None:
        """GroupCommit listener: ``batch`` is durable now."""
        if not self.subs:
            return
        latest: dict[str, tuple[int, object]] = {}
        for item in batch:
            tx = item.tx
            slot = tx.slot if tx is not None else self.node.slot
            if tx is not None:
                subs = self.signatures.get(tx.signature)
                if subs:
                    for sub in list(subs.values()):
                        if sub.received:
                            sub.notify({"context": {"slot": slot}, "value": "receivedSignature"})
                            sub.received = False
                        self._landed(sub, slot, tx.err)
                if self.logs or self.mentions:
                    self._logs(tx, item.addresses, lambda sub: sub.level != "finalized")
            if self.accounts or self.programs:  # only the accounts someone follows
                for acc in item.accounts:
                    if acc.pubkey in self.accounts or acc.owner in self.programs:
                        latest[acc.pubkey] = (slot, acc)
                for key in item.deleted:
                    if key in self.accounts:
                        latest[key] = (slot, None)
        for key, (slot, stored) in latest.items():
            acc = Account(stored.lamports, stored.data, Pubkey.from_string(stored.owner), stored.executable, stored.rent_epoch) if stored is not None else None
            self._account_changed(key, acc, slot, None, lambda sub: sub.level != "finalized")

    def _logs(self, tx, addresses, wanted) -> None:
        subs = [sub for sub in self.logs.values() if wanted(sub)]
        if self.mentions:
            for address in addresses:  # the keys of one message are distinct
                group = self.mentions.get(address)
                if group:
                    subs += [sub for sub in group.values() if wanted(sub)]
        if not subs:
            return
        result = {"context": {"slot": tx.slot}, "value": {"signature": tx.signature, "err": tx.err, "logs": tx.meta.get("logMessages") or []}}
        for sub in subs:
            sub.notify(result)

    def _account_changed(self, key: str, acc, slot: int, at, wanted) -> None:
        """Account and program notifications for one account's new state (``at``: the slot
        its state is read at, for the mints of jsonParsed token accounts)."""
        getter = (lambda k: self.node.account(k, at))
        pk = None
        cache: dict = {}

        def encoded(sub):
            nonlocal pk
            pk = pk or Pubkey.from_string(key)
            ident = (sub.encoding, sub.sliced)
            if ident not in cache:
                cache[ident] = encode_account(pk, acc if acc is not None else _EMPTY, sub.encoding, sub.sliced, getter, strict=False)
            return cache[ident]

        for sub in list(self.accounts.get(key, {}).values()):
            if wanted(sub):
                sub.notify({"context": {"slot": slot}, "value": encoded(sub)})
        if acc is None:
            return  # a closed account is no longer the program's
        for sub in list(self.programs.get(str(acc.owner), {}).values()):
            if not wanted(sub) or not AccountMethods._matches(acc, sub.filters):
                continue
            value = encoded(sub)
            if sub.encoding == "jsonParsed" and acc.owner in tokens.TOKEN_PROGRAMS and not isinstance(value["data"], dict):
                continue  # as the reference: token accounts that do not parse are left out
            sub.notify({"context": {"slot": slot}, "value": {"pubkey": key, "account": value}})

    # --- notifications: slots -----------------------------------------------------------------
    def slot_advanced(self, slot: int, parent: int, root: int, rooted: dict[int, set[str]]) -> None:
        if self.slots:
            info = {"parent": parent, "root": root, "slot": slot}
            for sub in list(self.slots.values()):
                sub.notify(info)
        if self.slot_updates:
            self._slot_updates(slot, parent, root if root != self.last_root else None)
        self.blocks.slot_advanced(parent, self.last_root, root)
        if root != self.last_root:
            self.last_root = root
            for sub in list(self.roots.values()):
                sub.notify(root)
        for landed_slot in sorted(s for s in self.pending_final if s <= root):
            for sub in self.pending_final.pop(landed_slot):
                if sub.id in self.subs:
                    sub.notify({"context": {"slot": landed_slot}, "value": {"err": sub.landed}})
                    self._remove(sub)
        finalized = lambda sub: sub.level == "finalized"  # noqa: E731
        wants_accounts = any(sub.level == "finalized" for index in (self.accounts, self.programs) for group in index.values() for sub in group.values())
        wants_logs = any(sub.level == "finalized" for sub in self.logs.values()) or any(sub.level == "finalized" for group in self.mentions.values() for sub in group.values())
        for rooted_slot in sorted(rooted):
            if wants_logs:
                for tx in self.node.store.slot_transactions(rooted_slot):
                    keys = list(tx.meta.get("loadedAddresses", {}).get("writable", [])) + list(tx.meta.get("loadedAddresses", {}).get("readonly", []))
                    self._logs(tx, _static_keys(tx.raw) + keys, finalized)
            if wants_accounts:
                for key in rooted[rooted_slot]:
                    if key in self.accounts or self.programs:
                        self._account_changed(key, self.node.account(Pubkey.from_string(key), root), rooted_slot, root, finalized)

    def _slot_updates(self, slot: int, parent: int, new_root: int | None) -> None:
        """slotsUpdates for a slot advance: the parent's block is complete and its bank
        frozen, and — one node, no votes to wait for — optimistically confirmed at once (as
        `confirmed` reads see it); the new slot's bank is created; the root moved. No
        firstShredReceived (a leader receives no shreds of its own slots: Agave sends none
        for them) and no dead slot (no forks). Each transaction runs alone: an entry each."""
        now = int(time.time() * 1000)
        updates = []
        block = self.node.store.block(parent) if parent >= 1 else None
        if block is not None:
            failed = self.node.store.failed_in_block(block)
            stats = {"numTransactionEntries": block.tx_count, "numSuccessfulTransactions": block.tx_count - failed,
                     "numFailedTransactions": failed, "maxTransactionsPerEntry": 1 if block.tx_count else 0}
            updates += [{"type": "completed", "slot": parent, "timestamp": now}, {"type": "frozen", "slot": parent, "timestamp": now, "stats": stats},
                        {"type": "optimisticConfirmation", "slot": parent, "timestamp": now}]
        updates.append({"type": "createdBank", "slot": slot, "parent": parent, "timestamp": now})
        if new_root is not None:
            updates.append({"type": "root", "slot": new_root, "timestamp": now})
        for sub in list(self.slot_updates.values()):
            for update in updates:
                sub.notify(update)

    def stats(self) -> dict:
        buffered = sum(c.transport.get_write_buffer_size() for c in self.connections if c.transport is not None)
        return {"connections": len(self.connections), "subscriptions": len(self.subs), "bufferedBytes": buffered}


def _static_keys(raw: bytes) -> list[str]:
    from solders.transaction import VersionedTransaction

    return [str(k) for k in VersionedTransaction.from_bytes(raw).message.account_keys]


_UNSUBSCRIBE = {f"{kind}Unsubscribe" for kind in ("account", "program", "signature", "logs", "slot", "slotsUpdates", "root", "block")}
