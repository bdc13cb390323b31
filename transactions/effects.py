"""Offchain effects of operations, applied once when their transaction settles.

Each area registers, per operation name, a handler for success and optionally one for
failure (FAILED, EXPIRED or CANCELLED) in its own ``effects`` module (imported by its
AppConfig.ready); ``on_every_confirmation`` hooks run for every confirmed transaction
(e.g. balance history). The engine calls them inside the database transaction that claims
``effects_applied_at``, so each runs exactly once per transaction.

No network under database locks (docs/transactions.md, "Path of a mutation"): everything a
confirmation's handlers need from the chain is read first, by ``prefetch``, while no
database transaction is open, and handed to them as ``ConfirmationFacts``; handlers only
read and write the database. ``prefetch`` always reads the transaction's own record (one
getTransaction: lamport and token balances); an area that needs account data (e.g. the
mints a transaction names) declares which with ``needs_accounts``, and every area's
addresses are read together in one getMultipleAccounts. A chain outage in the prefetch
raises before anything is claimed, so the pump retries with nothing changed. The pump
prefetches for every transaction of a pass at once (``prefetch_many``).

Signatures: success handlers and confirmation hooks ``fn(tx, facts)``; failure handlers
``fn(tx)`` (they only undo offchain records; nothing is read from the chain for them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from solders.account import Account
from solders.signature import Signature

from chain.rpc import TransactionBalances, rpc_for
from chain.slot_order import SlotOrder, read_slot_order
from ledger_project.metrics import meters

logger = logging.getLogger("ledger.transactions")

_HANDLERS: dict[str, Callable] = {}
_FAILURE_HANDLERS: dict[str, Callable] = {}
_EVERY: list[Callable] = []
_BATCH: list[Callable] = []
_LOCK_FIRST: list[Callable] = []
_ACCOUNTS_NEEDED: list[Callable] = []
_BALANCES_RECORDED: list[Callable] = []
_IN_FLIGHT_MARKED: list = []


@dataclass(frozen=True)
class ConfirmationFacts:
    """What the chain says about one confirmed transaction, read before its effects apply.

    - ``transaction``: its own record from one getTransaction (``chain.balances.TransactionBalances``:
      ``slot``; ``keys``, static then loaded from lookup tables; ``lamports`` address →
      (pre, post); ``tokens`` token account → ``TokenBalance`` (mint, owner, program_id,
      decimals, pre, post, opened, closed), amounts in base units). None when the node has
      no metadata for it (pruned history).
    - ``addresses``: every address the transaction names — ``transaction.keys`` when the
      record is known, else the message's static keys.
    - ``accounts``: address → account data (solders ``Account``; None when absent on chain)
      for every address an area asked for with ``needs_accounts``; read in one
      getMultipleAccounts (per 100 addresses) at ``confirmed``, after the transaction
      confirmed, at a slot no older than the newest confirmation of the pass that asked
      (``minContextSlot``: a lagging node never answers it from before the write).
    - ``accounts_slot``: the slot that read answered at (None when nothing was asked): a
      handler compares it with what its record already reflects, so a read that another
      worker's fresher one overtook never moves a record backwards.
    - ``order``: the place within its slot of every transaction that touched an address
      whose balance an area records (``records_balances``) and that this pass's
      transactions moved, as the node stated it (``chain.slot_order``; shared by the
      pass): it orders two confirmations of one slot, whichever holder applies them
      first; empty when the node did not say (``later`` answers None: the safe path).
    """

    transaction: TransactionBalances | None
    addresses: tuple[str, ...]
    accounts: dict[str, Account | None] = field(default_factory=dict)
    accounts_slot: int | None = None
    order: SlotOrder = field(default_factory=SlotOrder)


def _register(table: dict, operation: str):
    def register(fn: Callable) -> Callable:
        if table.get(operation, fn) is not fn:
            raise RuntimeError(f"two effect handlers for {operation}")
        table[operation] = fn
        return fn

    return register


def effect_handler(operation: str):
    """Register ``fn(tx, facts)``: what a confirmed ``operation`` changes offchain."""
    return _register(_HANDLERS, operation)


def failure_handler(operation: str):
    """Register ``fn(tx)``: what an ``operation`` that did not land undoes offchain."""
    return _register(_FAILURE_HANDLERS, operation)


def on_every_confirmation(fn: Callable) -> Callable:
    """Register ``fn(tx, facts)``, run for every confirmed transaction whatever its operation."""
    if fn not in _EVERY:
        _EVERY.append(fn)
    return fn


def on_confirmations(fn: Callable) -> Callable:
    """Register ``fn(confirmed)``, run once for transactions confirmed together (a chunk
    of a pump pass: ``confirmed`` is a list of (tx, facts) in the order they were
    applied), after their own handlers and in the same database transaction: for
    set-based writes (one UPDATE for many). It must be right for any subset of
    transactions: when it raises, the engine redoes the chunk calling it with one
    transaction at a time, inside that transaction's savepoint."""
    if fn not in _BATCH:
        _BATCH.append(fn)
    return fn


def marks_in_flight(*models) -> None:
    """Register models whose ``pending_transaction`` marks a record while an operation on it
    is in flight (docs/transactions.md): the engine ends the marks of the transactions that
    confirmed, with one UPDATE per model and chunk (``apply_batch``). A failure handler ends
    its own (it may need the record first)."""
    for model in models:
        if model not in _IN_FLIGHT_MARKED:
            _IN_FLIGHT_MARKED.append(model)


def _in_flight_ended(confirmed) -> None:
    done = [tx.pk for tx, _ in confirmed]
    for model in _IN_FLIGHT_MARKED:
        model._base_manager.filter(pending_transaction__in=done).update(pending_transaction=None)


def lock_first(fn: Callable) -> Callable:
    """Register ``fn(confirmed)``: row locks to take at the start of the database
    transaction that applies a chunk of confirmations, before any handler runs, so the
    engine locks in the house order (accounts, then positions: positions/movement.py)
    whatever order its handlers and hooks write in."""
    if fn not in _LOCK_FIRST:
        _LOCK_FIRST.append(fn)
    return fn


def lock_batch(confirmed) -> None:
    for hook in _LOCK_FIRST:
        hook(confirmed)


def needs_accounts(fn: Callable) -> Callable:
    """Register ``fn(named) -> {transaction id: addresses}``: for each (tx, addresses the
    transaction names) of a prefetch, the addresses whose account data the area's handlers
    need (in ``facts.accounts``). Called once for every transaction of a pump pass, so an
    area answers for all with one query. It runs in the prefetch, outside any database
    transaction: it may read the database, never lock or write it."""
    if fn not in _ACCOUNTS_NEEDED:
        _ACCOUNTS_NEEDED.append(fn)
    return fn


def records_balances(fn: Callable) -> Callable:
    """Register ``fn(cluster, addresses) -> addresses``: those of ``addresses`` whose
    balance the area records from confirmations (one query). The prefetch reads the order
    within the slot of the transactions that moved them (``ConfirmationFacts.order``). It
    runs in the prefetch, outside any database transaction: it may read, never write."""
    if fn not in _BALANCES_RECORDED:
        _BALANCES_RECORDED.append(fn)
    return fn


def _moved(record: TransactionBalances) -> set[str]:
    return {a for a, (pre, post) in record.lamports.items() if pre != post} | {a for a, b in record.tokens.items() if b.pre != b.post}


# Clusters whose last read of the order within a slot failed: a failure is logged once, when
# it starts (the pump passes every 50 ms), and its end once; every one is counted.
_ORDER_FAILING: set[str] = set()


def _slot_order(rpc, records) -> SlotOrder:
    """The order within their slots of the transactions that moved a recorded balance.
    Never raises: an order the node did not give is unknown, and every balance it would
    have placed takes the safe path of ``moves_balance``, so a failing read costs
    precision, never a pass (docs/transactions.md, "Shards")."""
    oldest: dict[str, int] = {}
    moved: dict[str, int] = {}
    slots: dict[str, set[int]] = {}
    for record in records:
        if record is not None:
            for address in _moved(record):
                oldest[address] = min(oldest.get(address, record.slot), record.slot)
                moved[address] = moved.get(address, 0) + 1
                slots.setdefault(address, set()).add(record.slot)
    if not oldest:
        return SlotOrder()
    recorded: set[str] = set()
    for ask in _BALANCES_RECORDED:
        recorded |= set(ask(rpc.cluster, list(oldest)))
    try:
        order = read_slot_order(rpc, {a: slot for a, slot in oldest.items() if a in recorded}, moved, slots)
    except Exception as exc:  # noqa: BLE001 - the order is an aid with a safe fallback: it must not fail the pass
        order = SlotOrder(failures=[f"{type(exc).__name__}: {exc}"])
    _order_read(rpc.cluster, order)
    return order


def _order_read(cluster: str, order: SlotOrder) -> None:
    for source, count in order.sources.items():
        meters.slot_order_slots.labels(cluster, source).inc(count)
    if order.failures:
        meters.slot_order_failures.labels(cluster).inc()
        if cluster not in _ORDER_FAILING:
            _ORDER_FAILING.add(cluster)
            logger.warning("the order within a slot could not be read on %s (balances of one slot take the safe path until it can): %s", cluster, order.failures[0])
    elif cluster in _ORDER_FAILING:
        _ORDER_FAILING.discard(cluster)
        logger.info("the order within a slot is read on %s again", cluster)


def moves_balance(facts: ConfirmationFacts, address: str, last: tuple[int, int, str | None] | None, *, signature: str, pre: int, post: int, current: int) -> bool:
    """Whether a confirmation that took ``address``'s balance from ``pre`` to ``post``
    becomes its current balance, which reflects ``last`` (transaction id, slot, signature
    of its latest entry; None: none yet): only when the transaction comes after ``last`` in
    chain order. A later slot comes after; an earlier one does not; within one slot the
    order read by the prefetch decides (a transaction that left the balance as it was
    never moves it there: its place is then irrelevant). Without that order (the address's
    history past what one read covers) the balance moves only when the transaction starts
    from the recorded one."""
    slot = facts.transaction.slot
    if last is None or slot > last[1]:
        return True
    if slot < last[1] or pre == post:
        return False
    later = facts.order.later(address, slot, signature, last[2]) if last[2] else None
    return current == pre if later is None else later


def static_addresses(tx) -> list[str]:
    """The addresses of the transaction's message (lookup-table addresses are known only
    from its getTransaction record: ``ConfirmationFacts.addresses``)."""
    from chain.builder import message_from_bytes

    return [str(k) for k in message_from_bytes(bytes(tx.message)).account_keys]


def prefetch(tx) -> ConfirmationFacts:
    """Read what the confirmation handlers of ``tx`` need from the chain (``prefetch_many``)."""
    return prefetch_many([tx])[tx.pk]


def prefetch_many(txs) -> dict[int, ConfirmationFacts]:
    """Read what the confirmation handlers of ``txs`` (one cluster) need from the chain:
    their records in one JSON-RPC batch of getTransaction, every address the areas ask
    for in one getMultipleAccounts per 100 (a single read, so one ``accounts_slot`` for
    all), and the order within their slots (one batch of getSignaturesForAddress, and of
    getBlock for slots whose entries state no transactionIndex; a failure there only
    leaves the order unknown). Must run outside any database transaction; raises
    ChainUnavailable (nothing claimed yet) when the records or accounts cannot be read.
    Facts by transaction id."""
    txs = list(txs)
    if not txs:
        return {}
    rpc = rpc_for(txs[0].cluster)
    statics = [static_addresses(tx) for tx in txs]
    records = rpc.transactions_balances([(Signature.from_string(tx.onchain_id), static) for tx, static in zip(txs, statics)])
    addresses: dict[int, tuple[str, ...]] = {}
    for tx, static, record in zip(txs, statics, records):
        if record is None:
            logger.warning("transaction %s confirmed but its metadata is not available; balances not recorded", tx.onchain_id)
        addresses[tx.pk] = tuple(record.keys) if record is not None else tuple(static)
    wanted: dict[int, list[str]] = {tx.pk: [] for tx in txs}
    for ask in _ACCOUNTS_NEEDED:
        for pk, asked in ask([(tx, addresses[tx.pk]) for tx in txs]).items():
            wanted[pk].extend(str(a) for a in asked)
    everything = [a for asked in wanted.values() for a in asked]
    # Never from a node behind the confirmations being applied: the read carries the
    # newest of their slots as minContextSlot (a node behind it: retried, then
    # ChainBehind — a ChainUnavailable, so nothing is claimed and the next pass reads again).
    landed = [record.slot if record is not None else tx.slot for tx, record in zip(txs, records) if wanted[tx.pk]]
    newest = max((slot for slot in landed if slot), default=None)
    read = rpc.read_accounts(everything, min_context_slot=newest) if everything else None
    order = _slot_order(rpc, records)
    facts = {}
    for tx, record in zip(txs, records):
        if not wanted[tx.pk]:
            facts[tx.pk] = ConfirmationFacts(transaction=record, addresses=addresses[tx.pk], order=order)
        else:
            facts[tx.pk] = ConfirmationFacts(transaction=record, addresses=addresses[tx.pk], accounts={a: read.accounts[a] for a in wanted[tx.pk]}, accounts_slot=read.slot, order=order)
    return facts


def apply(tx, facts: ConfirmationFacts) -> None:
    handler = _HANDLERS.get(tx.operation)
    if handler is not None:
        handler(tx, facts)
    for hook in _EVERY:
        hook(tx, facts)


def apply_batch(confirmed) -> None:
    """The ``on_confirmations`` hooks, for (tx, facts) whose effects were just applied."""
    if confirmed:
        for hook in _BATCH:
            hook(confirmed)
        _in_flight_ended(confirmed)


def apply_failure(tx) -> None:
    handler = _FAILURE_HANDLERS.get(tx.operation)
    if handler is not None:
        handler(tx)
