"""Worker side of the transaction engine: send, follow, settle, expire (docs/transactions.md).

The cluster's pump (transactions/pump.py) calls ``transactions_submit`` (claim SIGNED →
SUBMITTED, send the stored bytes in JSON-RPC batches) and ``transactions_follow`` (batched
signature lookups; CONFIRMED / FINALIZED with effects applied once, many to a database
transaction; rebroadcast or EXPIRED when not found). ``transaction_expire_held`` (the
reconciliation task) ends held transactions whose lifetime is over, or follows one that
landed without the service sending it. The admin's Resubmit and Reconcile do the same for
one stuck transaction chosen by staff (transactions/staff.py). Everything here acts for no
tenant.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Sequence

from django.conf import settings
from django.db import transaction as db_transaction
from django.db.models import F, Q
from django.utils import timezone
from solders.signature import Signature

from ledger_project.metrics import meters
from tenancy.scoping import worker_only

from . import effects, landing, nonce_pool, notify, resign
from chain import builder
from chain.errors import ChainUnavailable, SimulationFailed
from chain.rpc import rpc_for
from .models import MessageLifetime, NonceAccount, Transaction, TransactionEvent, TransactionStatus
from .chain_record import chain_record_fields
from .ending import HELD, event, finish, lifetime_over, window_over
from .dkg_signers import dkg_signers_service_only

logger = logging.getLogger("ledger.transactions")

_COMMITMENT_RANK = {"processed": 0, "confirmed": 1, "finalized": 2}


@worker_only  # the pump: acts for no tenant
def transactions_submit(*, cluster: str | None = None, ids: Sequence[int] | None = None, limit: int = 256, buckets: Sequence[int] | None = None) -> list[int]:
    """Send SIGNED transactions' stored bytes, up to ``limit`` at once (``cluster``'s oldest
    first — of its shard ``buckets`` when given — or the given ``ids``), in JSON-RPC batches.
    Returns the ids this call claimed.

    The claim (SIGNED → SUBMITTED) commits before the bytes leave, so a second sender finds
    nothing to do, and a crash after the claim is healed by following: the same bytes are
    sent again (always safe) until their lifetime is over.
    """
    now = timezone.now()
    with db_transaction.atomic():
        due = Transaction.unscoped.filter(status=TransactionStatus.SIGNED, submit_when_signed=True)
        due = due.filter(pk__in=ids) if ids is not None else due.filter(cluster=cluster)
        if buckets is not None:
            due = due.filter(shard_key__in=buckets)
        # Row locks (PostgreSQL; SQLite runs one writer at a time): two senders never
        # claim one row, and neither waits for the other's rows.
        # Oldest first (pk: the order rows were recorded in), so waiting under a send budget is
        # fair; a row signed again (transactions/resign.py) is the same row: it keeps its place.
        claimed = list(due.select_for_update(skip_locked=True).order_by("pk").values_list("pk", flat=True)[:limit])
        if not claimed:
            return []
        # As many as the cluster's send budget allows now (LEDGER_RPC_BUDGETS, taken at
        # once, no wait): the rest stay SIGNED for the next pass (docs/transactions.md, "The pump").
        rpc = rpc_for(cluster or Transaction.unscoped.get(pk=claimed[0]).cluster)
        claimed = claimed[:rpc.send_budget(len(claimed))]
        if not claimed:
            return []
        Transaction.unscoped.filter(pk__in=claimed).update(status=TransactionStatus.SUBMITTED, submitted_at=now, updated_at=now, submit_attempts=F("submit_attempts") + 1)
        TransactionEvent.objects.bulk_create([TransactionEvent(transaction_id=pk, kind="SUBMITTED", detail={}) for pk in claimed])
        txs = list(Transaction.unscoped.filter(pk__in=claimed).order_by("pk"))
        notify.transactions_reached(txs, notify.POST_SUBMIT, now=now)  # handed to the network (webhooks)
    for tx in txs:
        meters.transaction_submissions.labels(tx.cluster).inc()
    try:
        _broadcast(txs, first=True)
    finally:
        rpc.unused_budget()
    return claimed


@worker_only  # a single send (tests, operators); the pump sends in batches
def transaction_submit(*, transaction_id: int) -> bool:
    """Send one SIGNED transaction (``transactions_submit``). Returns whether it was this
    call's to send."""
    return bool(transactions_submit(ids=[transaction_id]))


def _raw(tx: Transaction) -> bytes:
    return bytes(builder.assemble(builder.message_from_bytes(bytes(tx.message)), tx.signatures))


def _broadcast(txs: Sequence[Transaction], *, first: bool = False) -> None:
    """Send the stored bytes with preflight, in JSON-RPC batches (one cluster). Only the
    first send's preflight refusal is final (nothing else was ever sent); a rebroadcast's
    refusal proves nothing, since an earlier send may still land: the lifetime check
    decides (transactions_follow)."""
    if not txs:
        return
    try:
        answers = rpc_for(txs[0].cluster).send_raw_many([_raw(tx) for tx in txs], skip_preflight=False, preflight_commitment="processed")
    except ChainUnavailable as exc:
        # Unknown whether the node got them: following looks them up and sends them again.
        logger.warning("broadcast of %d transactions failed: %s", len(txs), exc.message)
        return
    for tx, answer in zip(txs, answers):
        if isinstance(answer, SimulationFailed):
            text = str(answer.err)
            if "AlreadyProcessed" in text or "BlockhashNotFound" in text:
                continue  # it landed, or expired / not yet visible: following decides
            if first:
                finish(tx, TransactionStatus.FAILED, error_message=answer.message, error={"err": text, "logs": answer.logs[-20:]})
            else:
                event(tx, "REBROADCAST_REFUSED", error_message=answer.message, err=text)
        elif isinstance(answer, Exception):
            logger.warning("broadcast refused: %s", answer, extra={"transactionId": str(tx.offchain_id)})


def _reached(status) -> str:
    return str(status.confirmation_status).rsplit(".", 1)[-1].lower() if status.confirmation_status is not None else "processed"


IN_FLIGHT = (TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED)


@worker_only  # reconciliation: acts for no tenant
def transaction_confirm(*, transaction_id: int) -> bool:
    """Follow one submitted transaction (``transactions_follow``). Returns True while it
    is still in flight."""
    tx = Transaction.unscoped.filter(pk=transaction_id, status__in=IN_FLIGHT).first()
    return tx is not None and transaction_id in transactions_follow([tx], rebroadcast_after=0)


@worker_only  # the pump: acts for no tenant
def transactions_follow(txs: Sequence[Transaction], *, rebroadcast_after: float | None = None) -> set[int]:
    """Follow submitted transactions of one cluster by signature, in batches: one
    getSignatureStatuses per 256, one JSON-RPC batch of getTransaction (and one
    getMultipleAccounts) for those whose effects are due, and one database transaction
    applying all of their effects. Returns the ids still in flight.

    Only ``confirmed`` or ``finalized`` statuses move a transaction (CONFIRMED, FINALIZED,
    FAILED) and apply effects; ``processed`` is on a block that may still be dropped, so it
    is only noted. Nothing moves a CONFIRMED transaction but finalization. One not found is
    sent again (same bytes: at most every ``rebroadcast_after`` seconds, by default
    LEDGER_PUMP_REBROADCAST_SECONDS) or, once its lifetime is provably over, EXPIRED.
    """
    txs = [tx for tx in txs if tx.status in IN_FLIGHT]
    if not txs:
        return set()
    rpc = rpc_for(txs[0].cluster)
    statuses = rpc.signature_statuses([Signature.from_string(tx.onchain_id) for tx in txs])
    in_flight: set[int] = set()
    settled: list[tuple[Transaction, object]] = []
    missing: list[Transaction] = []
    noted: list[tuple[Transaction, object]] = []
    for tx, status in zip(txs, statuses):
        if status is None:
            if tx.status == TransactionStatus.CONFIRMED:
                # Optimistically confirmed blocks are not rolled back; a node that lost track
                # of it (restart, pruned status cache) does not make it expired. Keep following.
                logger.warning("confirmed transaction %s not found by signature; still following", tx.onchain_id)
                in_flight.add(tx.pk)
                noted.append((tx, None))
            else:
                missing.append(tx)
        elif _reached(status) == "processed":
            in_flight.add(tx.pk)
            noted.append((tx, status))
        elif status.err is not None:
            finish(tx, TransactionStatus.FAILED, error_message=f"The transaction failed on chain: {status.err}", error={"err": str(status.err)}, slot=status.slot)
        else:
            settled.append((tx, status))
    in_flight |= _settle(settled)
    in_flight |= _follow_missing(missing, rpc, rebroadcast_after)
    _note(noted)
    return in_flight


def _applies(tx: Transaction, reached: str) -> bool:
    return _COMMITMENT_RANK[reached] >= max(_COMMITMENT_RANK["confirmed"], _COMMITMENT_RANK.get(tx.commitment, 1))


@worker_only  # the pump
def _settle(settled: list[tuple[Transaction, object]]) -> set[int]:
    """CONFIRMED / FINALIZED, with effects applied once where due, many in one database
    transaction (``_SETTLE_CHUNK``; a savepoint each: one handler's failure leaves the
    others applied and its own transaction in flight, retried on the next pass). What the
    effects need from the chain is read first, in batches, with no database transaction
    open; a chain outage there changes nothing."""
    if not settled:
        return set()
    due = [tx for tx, status in settled if tx.effects_applied_at is None and _applies(tx, _reached(status))]
    facts = effects.prefetch_many(due)
    # Reads of the cluster from now on reach the newest of these slots (chain/floor.py):
    # noted before the first chunk commits, so no reader sees a chunk's rows and then the
    # chain from before them. The chain holds these slots already; an early note costs nothing.
    newest = max((status.slot for _, status in settled if status.slot is not None), default=None)
    if newest is not None:
        rpc_for(settled[0][0].cluster).wrote(newest)
    in_flight: set[int] = set()
    for start in range(0, len(settled), _SETTLE_CHUNK):
        in_flight |= _settle_chunk(settled[start:start + _SETTLE_CHUNK], facts, timezone.now())
    return in_flight


# Confirmations applied per database transaction: one commit for many, while the row locks
# the handlers take (accounts, positions) are held only for a short chunk's worth of work.
_SETTLE_CHUNK = 25


@worker_only  # the pump
def _settle_chunk(settled: list[tuple[Transaction, object]], facts: dict, now) -> set[int]:
    """One database transaction for ``settled``: the ``on_confirmations`` hooks run once
    for all whose effects applied; if one of them raises, the chunk is rolled back and
    redone with the hooks called per transaction, each in its own savepoint."""
    locking = [(tx, facts[tx.pk]) for tx, _ in settled if tx.pk in facts]
    try:
        with db_transaction.atomic():
            effects.lock_batch(locking)
            in_flight, applied = _settle_each(settled, facts, now, batch_hooks=False)
            effects.apply_batch([(tx, facts[tx.pk]) for tx in applied])
            _effects_applied(applied)
            _landed_events(settled, now)
        return in_flight
    except Exception:  # noqa: BLE001 - a batch hook failed: redo one transaction at a time
        logger.exception("batch confirmation hooks failed for %d transactions; applying them one at a time", len(settled))
    for tx, _ in settled:
        if tx.confirmed_at == now:
            tx.confirmed_at = None  # set by the run that rolled back: the redo sets it again
    with db_transaction.atomic():
        effects.lock_batch(locking)
        in_flight, applied = _settle_each(settled, facts, now, batch_hooks=True)
        _effects_applied(applied)
        _landed_events(settled, now)
    return in_flight


def _landed_events(settled: list[tuple[Transaction, object]], now) -> None:
    """The post_submit events of the chunk's transactions that landed in it (confirmed_at
    set by this chunk: CONFIRMED, or FINALIZED when first seen so), in one INSERT."""
    notify.transactions_reached([tx for tx, _ in settled if tx.confirmed_at == now], notify.POST_SUBMIT, now=now)


def _effects_applied(applied: list[Transaction]) -> None:
    """The EFFECTS_APPLIED events of a chunk, in one insert."""
    TransactionEvent.objects.bulk_create([TransactionEvent(transaction_id=tx.pk, kind="EFFECTS_APPLIED", detail={}) for tx in applied])


@worker_only  # the pump
def _settle_each(settled: list[tuple[Transaction, object]], facts: dict, now, *, batch_hooks: bool) -> tuple[set[int], list[Transaction]]:
    """Each transaction in a savepoint of its own: its status, and where due its effects
    (claimed by ``effects_applied_at`` in the same UPDATE). Returns the ids still in flight
    and the transactions whose effects applied."""
    in_flight: set[int] = set()
    applied: list[Transaction] = []
    for tx, status in settled:
        finalized = _reached(status) == "finalized"
        first_landing = tx.confirmed_at is None  # the request → CONFIRMED latency is observed once
        try:
            with db_transaction.atomic():
                fields = {"status": TransactionStatus.FINALIZED if finalized else TransactionStatus.CONFIRMED, "slot": status.slot, "updated_at": now,
                          "confirmations_count": status.confirmations if status.confirmations is not None else (32 if finalized else 0)}
                if tx.confirmed_at is None:
                    fields["confirmed_at"] = now
                if tx.pk in facts and facts[tx.pk].transaction is not None:
                    # Fee, compute units, logs: from the getTransaction the effects read anyway,
                    # in the same UPDATE (Fetch Transaction Details reads them from here).
                    fields.update(chain_record_fields(facts[tx.pk].transaction))
                if finalized:
                    fields["finalized_at"] = now
                moving = Transaction.unscoped.filter(pk=tx.pk, status__in=IN_FLIGHT)
                claimed = tx.pk in facts and moving.filter(effects_applied_at__isnull=True).update(**fields, effects_applied_at=now)
                if not claimed and not moving.update(**fields):
                    continue  # ended meanwhile (another pump, a cancel): not ours to settle
                for name, value in fields.items():
                    setattr(tx, name, value)
                if claimed:
                    # Once: the claim above is the only way in, in this savepoint.
                    tx.effects_applied_at = now
                    effects.apply(tx, facts[tx.pk])
                    if batch_hooks:
                        effects.apply_batch([(tx, facts[tx.pk])])
                if finalized:
                    NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None, leased_at=None, written_slot=nonce_pool.later_slot(status.slot))
                    event(tx, "FINALIZED", slot=status.slot)
        except Exception:  # noqa: BLE001 - one transaction's bug must not hold up the others
            logger.exception("could not settle transaction %s; it stays in flight", tx.pk)
            if tx.confirmed_at == now:
                tx.confirmed_at = None  # rolled back with its savepoint: not landed in this chunk (webhooks)
            in_flight.add(tx.pk)
            continue
        if claimed:
            applied.append(tx)
        if first_landing:
            meters.transaction_confirmation.labels(tx.cluster).observe(max(0.0, (now - tx.txn_timestamp).total_seconds()))
        if finalized:
            meters.transaction_ended.labels(tx.cluster, TransactionStatus.FINALIZED).inc()
        else:
            in_flight.add(tx.pk)
    return in_flight, applied


@worker_only  # the pump
def _follow_missing(missing: list[Transaction], rpc, rebroadcast_after: float | None) -> set[int]:
    """Submitted, not found by signature: EXPIRED once provably dead, else sent again
    (the same bytes) when ``rebroadcast_after`` seconds passed since the last send."""
    if not missing:
        return set()
    for tx in missing:
        if tx.lifetime == MessageLifetime.DURABLE_NONCE and window_over(tx.submitted_at):
            nonce_pool.nonce_advance(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    height = rpc.block_height() if any(tx.lifetime == MessageLifetime.RECENT_BLOCKHASH for tx in missing) else None
    over = [tx for tx in missing if lifetime_over(tx, rpc, height=height)]
    # Looked up again *after* the lifetime check: one may have landed between the first
    # lookup and the check, and must not then be called expired.
    again = rpc.signature_statuses([Signature.from_string(tx.onchain_id) for tx in over]) if over else []
    dead = {tx.pk for tx, status in zip(over, again) if status is None}
    waiting: set[int] = set()
    for tx in over:
        if tx.pk in dead:
            # Signed again on a fresh blockhash when the service holds every key (transactions/resign.py).
            outcome = resign.resign_dead(tx, rpc) if resign.resignable(tx) else "expire"
            if outcome == "expire":
                finish(tx, TransactionStatus.EXPIRED, error_message=_expired_message(tx))
            else:
                waiting.add(tx.pk)  # SIGNED again (the next pass sends it), or not provably dead at finalized yet
    alive = [tx for tx in missing if tx.pk not in dead]
    cutoff = timezone.now() - timedelta(seconds=settings.LEDGER_PUMP_REBROADCAST_SECONDS if rebroadcast_after is None else rebroadcast_after)
    resend = [tx for tx in alive if tx.updated_at is None or tx.updated_at <= cutoff]
    _broadcast(resend)
    if resend:
        meters.transaction_rebroadcasts.labels(resend[0].cluster).inc(len(resend))
        Transaction.unscoped.filter(pk__in=[tx.pk for tx in resend]).update(updated_at=timezone.now())
    if waiting:
        Transaction.unscoped.filter(pk__in=waiting, status=TransactionStatus.SUBMITTED).update(updated_at=timezone.now())
    return {tx.pk for tx in alive} | waiting


@worker_only  # the pump
def _note(noted: list[tuple[Transaction, object]]) -> None:
    """Still in flight and looked at: the slot a ``processed`` status names; updated_at
    either way (CONFIRMED ones are looked at again LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS
    later)."""
    if not noted:
        return
    now = timezone.now()
    for tx, status in noted:
        if status is not None:
            Transaction.unscoped.filter(pk=tx.pk).update(slot=status.slot, updated_at=now)
    Transaction.unscoped.filter(pk__in=[tx.pk for tx, status in noted if status is None]).update(updated_at=now)


_EXPIRED_MESSAGE = {
    MessageLifetime.RECENT_BLOCKHASH: "The transaction's blockhash expired before it landed; nothing was executed.",
    MessageLifetime.DURABLE_NONCE: "The transaction's durable nonce was advanced before it landed; nothing was executed.",
}


def _expired_message(tx: Transaction) -> str:
    if tx.resign_count:
        return (f"The transaction's blockhash expired before it landed, {tx.resign_count + 1} times (it was signed again on a fresh blockhash "
                f"{tx.resign_count} times, the most LEDGER_RESIGN_MAX allows); nothing was executed.")
    return _EXPIRED_MESSAGE[tx.lifetime]


@worker_only  # reconciliation: acts for no tenant
def transaction_expire_held(*, transaction_id: int) -> str | None:
    """End a transaction the service never submitted (PARTIALLY_SIGNED, PENDING_APPROVAL,
    SIGNED and held) once it can provably never execute: its blockhash is past its last
    valid height, or its durable nonce moved on — which the service makes happen itself
    when LEDGER_DURABLE_NONCE_WINDOW_SECONDS have passed since it was built. Failure
    effects run and the nonce lease ends. Returns the new status, if any.

    If it landed anyway (someone holding every signature sent it), it becomes SUBMITTED
    and is followed like a submitted one — found by its signature, or, when the fee
    payer's signature is unknown (it signs off platform), by its message in the chain's
    history (``landing.find_landed``, at most LEDGER_LANDING_SCAN_PER_RUN signatures per
    run; an unfinished scan leaves it held and the next run resumes).
    """
    tx = Transaction.unscoped.filter(pk=transaction_id, status__in=HELD).first()
    if tx is None or (tx.status == TransactionStatus.SIGNED and tx.submit_when_signed):
        return None  # SIGNED and queued: the submit path owns it
    return _end_held(tx)


def transaction_end_withdrawn(*, transaction: Transaction) -> str | None:
    """Withdraw Transaction, after its mark committed: end the withdrawn ``transaction``
    (found through the tenant's door) now if it can be — ``_end_held``, which the
    reconciliation runs for it too until it has ended. Returns the new status, if any."""
    tx = Transaction.objects.for_tenant(transaction.tenant).filter(pk=transaction.pk, status=TransactionStatus.PARTIALLY_SIGNED, withdrawn_at__isnull=False).first()
    return _end_held(tx) if tx is not None else None


#: The event Withdraw Transaction records (transactions/withdrawals.py); its detail names who and why.
WITHDRAWN = "WITHDRAWN"


def _withdrawn(tx: Transaction) -> bool:
    return tx.status == TransactionStatus.PARTIALLY_SIGNED and tx.withdrawn_at is not None


def _withdrawn_message(tx: Transaction) -> str:
    """A withdrawn transaction's errorMessage once it ended: who withdrew it and why (its
    WITHDRAWN event)."""
    event = TransactionEvent.objects.filter(transaction=tx, kind=WITHDRAWN).order_by("-at", "-pk").first()
    detail = event.detail if event is not None else {}
    reason = detail.get("reason") or ""
    return f"Withdrawn by {detail.get('by') or 'its client'}" + (f": {reason}" if reason else "") + "; nothing was executed."


def _end_held(tx: Transaction) -> str | None:
    """``transaction_expire_held`` for one held row. A withdrawn one (Withdraw Transaction)
    ends CANCELLED instead of EXPIRED, and its durable nonce is advanced at once rather than
    at the end of the signing window."""
    rpc = rpc_for(tx.cluster)
    withdrawn = _withdrawn(tx)
    if withdrawn and dkg_signers_service_only(transaction=tx):
        # A signer only the service's own threshold players can sign for, and it signs nothing
        # more for this transaction: no complete set of signatures exists or ever will, so it
        # never landed and never executes — CANCELLED now, whatever its lifetime; its nonce
        # need not be advanced before the lease ends.
        ended = finish(tx, TransactionStatus.CANCELLED, unless_moved=Q(status=TransactionStatus.PARTIALLY_SIGNED), never_complete=True,
                        error_message=_withdrawn_message(tx))
        return TransactionStatus.CANCELLED if ended else None
    if tx.lifetime == MessageLifetime.DURABLE_NONCE and (withdrawn or window_over(tx.txn_timestamp)):
        # Lands (and is waited for) before the lifetime check below reads the nonce; a
        # no-op when the nonce moved on already or its authority signs off platform.
        nonce_pool.nonce_advance(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    if not lifetime_over(tx, rpc):
        Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now())
        return None
    if tx.onchain_id:
        landed = rpc.signature_statuses([Signature.from_string(tx.onchain_id)])[0]
        if landed is not None:
            return _landed_unsubmitted(tx, slot=landed.slot)
    else:
        scan = landing.find_landed(tx, rpc, budget=settings.LEDGER_LANDING_SCAN_PER_RUN, resume_before=_scan_cursor(tx))
        if scan.landed:
            return _landed_unsubmitted(tx, slot=scan.slot, signatures=scan.signatures)
        if not scan.done:
            event(tx, "LANDING_SCAN", before=scan.cursor, examined=scan.examined)
            Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now())
            return None
    if withdrawn:
        ended = finish(tx, TransactionStatus.CANCELLED, unless_moved=Q(status=TransactionStatus.PARTIALLY_SIGNED), error_message=_withdrawn_message(tx))
        return TransactionStatus.CANCELLED if ended else None
    return TransactionStatus.EXPIRED if finish(tx, TransactionStatus.EXPIRED, error_message=_EXPIRED_MESSAGE[tx.lifetime]) else None


def _scan_cursor(tx: Transaction) -> str | None:
    """Where the last unfinished history scan of ``tx`` stopped (its LANDING_SCAN event)."""
    last = TransactionEvent.objects.filter(transaction=tx, kind="LANDING_SCAN").order_by("-at", "-pk").first()
    return last.detail.get("before") if last is not None else None


@worker_only  # called by transaction_expire_held (reconciliation) only
def _landed_unsubmitted(tx: Transaction, *, slot: int, signatures: dict[str, str] | None = None) -> str | None:
    """A held transaction found on chain: SUBMITTED (and due for following, whatever
    submit_when_signed said), with the signatures it landed with; the confirm path moves
    it on and applies effects once."""
    now = timezone.now()
    fields = {"status": TransactionStatus.SUBMITTED, "submit_when_signed": True, "submitted_at": now, "updated_at": now}
    if signatures:
        fields.update(signatures={**tx.signatures, **signatures}, onchain_id=signatures[tx.required_signers[0]])
    if not Transaction.unscoped.filter(pk=tx.pk, status=tx.status).update(**fields):
        return None
    event(tx, "LANDED_UNSUBMITTED", slot=slot, found_by="history" if signatures else "signature")
    return TransactionStatus.SUBMITTED


@worker_only  # reconciliation sweeps every tenant
def transactions_held(*, stale_after: timedelta = timedelta(seconds=5)) -> list[int]:
    """Ids of transactions the service holds without submitting (PARTIALLY_SIGNED,
    PENDING_APPROVAL, SIGNED not to be submitted), not looked at for ``stale_after``: their
    lifetime may be over. (Those to send or follow are the pump's.)"""
    stale = Transaction.unscoped.filter(updated_at__lt=timezone.now() - stale_after)
    held = stale.filter(Q(status__in=[TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.PENDING_APPROVAL]) | Q(status=TransactionStatus.SIGNED, submit_when_signed=False))
    return list(held.values_list("pk", flat=True)[:1000])
