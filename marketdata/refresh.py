"""Refresh: evaluate a data source's job and send the value to its feed (docs/marketdata.md,
"Refresh"). Evaluations run in the worker — nothing in a request waits on a source — on
the source's schedule (beat) and on demand (Refresh Oracle Data Source, the back office's
"refresh now", which queue one).

1. **One at a time.** An evaluation is a row before it runs: REQUESTED (asked for, queued
   for the worker) or EVALUATING (a worker claimed it). At most one such row per source
   (a partial unique constraint): a refresh asked for meanwhile is refused (409
   OPERATION_IN_PROGRESS), a beat tick skips. A worker claims the row with a conditional
   UPDATE (``claimed_until``: as long as an evaluation and a build can take), so a task
   delivered twice evaluates once, and a claim whose worker died lapses and is taken again.
2. **Evaluate** the job (marketdata.jobs: one deadline,
   LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS; outbound calls under the webhook URL
   rules). No value → FAILED and nothing is sent: **a failed evaluation never writes a
   value**.
3. **Round**: the next round, handed out under the source's row lock past the last one
   handed out and the feed's (rounds only grow; a number that is not sent leaves a gap,
   which the program allows). The observation time is the evaluation's end.
4. **Build** the program's Update signed by the feed's authority, simulated: a refusal
   (the program's error, e.g. AuthorityMismatch when someone handed the feed to another
   authority) is REJECTED, nothing sent.
5. **Write phase**: the evaluation SUBMITTED with its transaction, the source's in-flight
   marker set; on confirmation CONFIRMED and the source's copy of the feed updated
   (effects.py), on failure NOT_LANDED.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError
from django.db import transaction as db_transaction
from django.db.models import Q
from django.utils import timezone
from solders.pubkey import Pubkey

from accounts.locks import ensure_no_operation_in_flight
from ledger_project.api.errors import ConflictError, LedgerError, api_error
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from ledger_project.metrics import meters
from marketdata.jobs import MantissaError, evaluate, parse_job, to_mantissa
from programs.price_feed import client
from tenancy.scoping import worker_only
from chain.errors import ChainError, ProgramError
from transactions.services import transaction_record

from . import onchain, operations
from .locks import lock_source
from .models import IN_PROGRESS, DataSourceEvaluation, DataSourceStatus, EvaluationStatus, EvaluationTrigger, OnchainDataSource, joined_errors
from .services import SOURCE_FIELD, SourceResult, authority_signer, build, record_admin_request

logger = logging.getLogger("ledger.marketdata")


def refreshable(source: OnchainDataSource, field: str = SOURCE_FIELD) -> OnchainDataSource:
    """An ACTIVE source with no change of its feed in flight (400 / 409 otherwise)."""
    if source.status != DataSourceStatus.ACTIVE:
        raise LedgerError(f"The data source is {source.status}: only an ACTIVE one is refreshed.", field=field, code="DATA_SOURCE_NOT_ACTIVE")
    ensure_no_operation_in_flight(source, field=field)
    return source


def claim_seconds() -> float:
    """How long a worker's claim on an evaluation lasts: the evaluation's deadline (and its
    grace), then a build's RPC calls."""
    return settings.LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS + settings.LEDGER_RPC_TIMEOUT_SECONDS * 3 + 5


def _in_progress(tenant, source: OnchainDataSource):
    return DataSourceEvaluation.objects.for_tenant(tenant).filter(data_source=source, status__in=IN_PROGRESS)


def _expire_abandoned(tenant, source: OnchainDataSource) -> None:
    """An evaluation whose worker died (its claim lapsed) or that no worker picked up (its
    task lost with the broker) ends FAILED, so the source can be refreshed again."""
    now, stale = timezone.now(), timezone.now() - timedelta(seconds=claim_seconds())
    pending = _in_progress(tenant, source)
    pending.filter(status=EvaluationStatus.EVALUATING, claimed_until__lt=now).update(
        status=EvaluationStatus.FAILED, error="Abandoned: the worker evaluating it stopped before it ended; nothing was sent.", finished_at=now, updated_at=now)
    pending.filter(status=EvaluationStatus.REQUESTED, created_at__lt=stale).update(
        status=EvaluationStatus.FAILED, error="No worker picked it up in time; nothing was sent.", finished_at=now, updated_at=now)


def _new_evaluation(source: OnchainDataSource, **fields) -> DataSourceEvaluation:
    """Insert an in-progress evaluation (a savepoint: IntegrityError when one exists)."""
    row = DataSourceEvaluation(tenant_id=source.tenant_id, cluster=source.cluster, data_source=source, job_hash=source.job_hash, **fields)
    with db_transaction.atomic():
        row.save(force_insert=True)
    return row


def data_source_refresh(ctx: OperationContext, *, source: OnchainDataSource, trigger: str, requested_by: str = "") -> SourceResult:
    """Refresh Oracle Data Source / "refresh now": queue an evaluation of ``source`` for the
    worker (REQUESTED; the task is sent once this commits). 409 OPERATION_IN_PROGRESS when
    one is queued or running, or the feed is changing."""
    tenant = ctx.tenant
    refreshable(source)
    with write_phase():
        locked = refreshable(lock_source(source.pk, tenant=tenant))
        _expire_abandoned(tenant, locked)
        try:
            row = _new_evaluation(locked, trigger=trigger, status=EvaluationStatus.REQUESTED, requested_by=requested_by or "")
        except IntegrityError as exc:
            raise ConflictError("A refresh of this data source is queued or running; retry once it ends.", field=SOURCE_FIELD, code="OPERATION_IN_PROGRESS") from exc
        db_transaction.on_commit(lambda: _kick(row.pk))
    return SourceResult(locked, None, row)


def _kick(evaluation_id: int) -> None:
    # After the commit the request has succeeded: a broker outage must not turn it into a
    # 500. The row stays REQUESTED; the source's next beat tick runs it (or, on demand only,
    # the next refresh finds it abandoned and asks again).
    from .tasks import evaluate_data_source

    try:
        evaluate_data_source.delay(evaluation_id=evaluation_id)
    except Exception:  # noqa: BLE001 - any broker/transport failure
        logger.warning("could not queue evaluation %s; the source's next tick runs it", evaluation_id, exc_info=True)


# --- the worker -------------------------------------------------------------------------------


def _claimable(now) -> Q:
    return Q(status=EvaluationStatus.REQUESTED) | Q(status=EvaluationStatus.EVALUATING, claimed_until__lt=now)


@worker_only  # the evaluation task: the row names its organization
def evaluation_run(*, evaluation_id: int) -> str:
    """The task of a queued evaluation: claim it, evaluate, send. A second delivery (or a
    row another worker claimed) finds nothing to do."""
    now = timezone.now()
    claimed = DataSourceEvaluation.unscoped.filter(_claimable(now), pk=evaluation_id).update(
        status=EvaluationStatus.EVALUATING, claimed_until=now + timedelta(seconds=claim_seconds()), started_at=now, updated_at=now)
    if not claimed:
        return "skipped: already evaluated or being evaluated"
    return _run(DataSourceEvaluation.unscoped.select_related("data_source__tenant").get(pk=evaluation_id))


@worker_only  # the periodic task of a source: acts for the source's own organization
def data_source_refresh_scheduled(*, data_source_id: int) -> str:
    """A beat tick: refresh the source if it is ACTIVE and free — a queued evaluation is
    run now, else a new one; a tick that finds it busy or not ACTIVE does nothing."""
    source = OnchainDataSource.unscoped.select_related("tenant", "pending_transaction").filter(pk=data_source_id).first()
    if source is None:
        return "skipped: no such data source"
    try:
        refreshable(source)
    except LedgerError as exc:
        return f"skipped: {exc.code}"
    tenant, now = source.tenant, timezone.now()
    _expire_abandoned(tenant, source)
    until = now + timedelta(seconds=claim_seconds())
    queued = _in_progress(tenant, source).filter(_claimable(now)).values_list("pk", flat=True).first()
    if queued is not None:
        if not DataSourceEvaluation.unscoped.filter(_claimable(now), pk=queued).update(status=EvaluationStatus.EVALUATING, claimed_until=until, started_at=now, updated_at=now):
            return "skipped: a refresh is in progress"
        row = DataSourceEvaluation.unscoped.get(pk=queued)
    else:
        try:
            row = _new_evaluation(source, trigger=EvaluationTrigger.SCHEDULE, status=EvaluationStatus.EVALUATING, claimed_until=until, started_at=now)
        except IntegrityError:
            return "skipped: a refresh is in progress"
    row.data_source = source
    return _run(row)


@dataclass
class _Outcome:
    """What an evaluation came to before its write phase: ``prepared`` the signed update
    to record, or ``status`` and ``error`` of one that sends nothing."""

    fields: dict
    status: str = EvaluationStatus.SUBMITTED
    error: str = ""
    prepared: object | None = None


@worker_only
def _run(row: DataSourceEvaluation) -> str:
    """Evaluate a claimed row and record what came of it (the module docstring)."""
    source = OnchainDataSource.unscoped.select_related("tenant", "authority_account__managed_key", "authority_key", "pending_transaction").get(pk=row.data_source_id)
    tenant = source.tenant
    try:
        refreshable(source)
        outcome = _evaluate_and_build(tenant, source)
    except (LedgerError, ChainError) as exc:
        # Not ACTIVE any more, its feed changing; or the cluster did not answer (5xx):
        # nothing was sent either way.
        outcome = _Outcome({}, EvaluationStatus.FAILED if api_error(exc).status_code >= 500 else EvaluationStatus.REJECTED, f"{exc.code}: {exc.message}")
    if outcome.prepared is None:
        _finish(row, outcome.status, outcome.error, outcome.fields)
    else:
        try:
            _record_update(tenant, source, row, outcome)
        except LedgerError as exc:  # the source changed meanwhile (its feed, a later round)
            _finish(row, EvaluationStatus.REJECTED, f"{exc.code}: {exc.message}", outcome.fields)
    row.refresh_from_db()
    logger.info("data source %s: evaluation %s %s", source.offchain_id, row.status, row.error[:300])
    return f"{row.status} round={row.round} mantissa={row.mantissa}" if row.transaction_id else f"{row.status}: {row.error[:200]}"


def _allocate_round(tenant, source: OnchainDataSource) -> int:
    """The source's next round, handed out under its row lock in a short transaction of
    its own (before signing: the round is in the signed instruction)."""
    with db_transaction.atomic():
        locked = refreshable(lock_source(source.pk, tenant=tenant))
        locked.last_round = max(locked.last_round, locked.onchain_round) + 1
        locked.save(update_fields=["last_round", "updated_at"])
        return locked.last_round


def _resync_round(tenant, source: OnchainDataSource) -> None:
    """The program found the round out of order: the feed was updated with rounds the
    record did not hand out (by its authority elsewhere). Catch up with the chain."""
    state, _ = onchain.read_feed(source.cluster, source.address, source.program_address)
    if state is not None:
        OnchainDataSource.objects.for_tenant(tenant).filter(pk=source.pk, last_round__lt=state.round).update(last_round=state.round)


_client = None
_client_pid = None
_client_lock = threading.Lock()


def _http():
    """One pooled keep-alive client per worker process, its threads sharing it (as webhook
    deliveries do): a client's TLS context costs tens of ms of CPU to make, more than the
    rest of an evaluation."""
    global _client, _client_pid
    with _client_lock:
        if _client is None or _client_pid != os.getpid():
            import httpx

            from ledger_project.outbound import outbound_client

            _client = outbound_client(limits=httpx.Limits(max_connections=32, max_keepalive_connections=16, keepalive_expiry=30.0))
            _client_pid = os.getpid()
        return _client


def _evaluate_and_build(tenant, source: OnchainDataSource) -> _Outcome:
    """Network phase: evaluate, hand out the round, build / simulate / sign the Update."""
    started = timezone.now()
    # Validated when saved; its URLs are checked again right before each call (evaluate), so
    # a host that stopped passing the rules fails that source, recorded, not the parse.
    evaluation = evaluate(parse_job(source.job_definition, check_urls=False), timeout_seconds=settings.LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS, client=_http())
    finished = timezone.now()
    fields = {"job_hash": source.job_hash, "started_at": started, "finished_at": finished, "record": evaluation.to_record()}
    if not evaluation.ok or evaluation.result is None:
        return _Outcome(fields, EvaluationStatus.FAILED, joined_errors(evaluation.errors) or "The job produced no value.")
    try:
        fields["mantissa"] = to_mantissa(evaluation.result, source.exponent)
    except MantissaError as exc:
        return _Outcome(fields, EvaluationStatus.FAILED, f"The result does not fit the feed: {exc}.")
    try:
        signer = authority_signer(tenant, source)
    except LedgerError as exc:  # the authority account was inactivated, or its key may not be used
        return _Outcome(fields, EvaluationStatus.REJECTED, f"{exc.code}: {exc.message}")
    fields["observed_at"] = finished.replace(microsecond=0)
    fields["round"] = _allocate_round(tenant, source)
    instruction = client.update(Pubkey.from_string(source.program_address), feed=Pubkey.from_string(source.address), authority=signer.pubkey,
                                round=fields["round"], value=fields["mantissa"], observed_at=int(fields["observed_at"].timestamp()))
    try:
        prepared = build(OperationContext.system(tenant=tenant, cluster=source.cluster), operation=operations.UPDATE, instructions=[instruction], signers=[signer])
    except ProgramError as exc:
        if exc.failure.name == "OutOfOrder":
            _resync_round(tenant, source)
        return _Outcome(fields, EvaluationStatus.REJECTED, exc.message)
    except (LedgerError, ChainError) as exc:
        status = EvaluationStatus.FAILED if api_error(exc).status_code >= 500 else EvaluationStatus.REJECTED  # 5xx: the cluster did not answer
        return _Outcome(fields, status, f"{exc.code}: {exc.message}")
    return _Outcome(fields, prepared=prepared)


def _record_update(tenant, source: OnchainDataSource, row: DataSourceEvaluation, outcome: _Outcome) -> None:
    fields, prepared = outcome.fields, outcome.prepared
    with write_phase(on_abort=prepared.release):
        locked = refreshable(lock_source(source.pk, tenant=tenant))
        if locked.last_round != fields["round"]:
            raise ConflictError("Another update of this feed was handed a later round meanwhile.", field=SOURCE_FIELD, code="OPERATION_IN_PROGRESS")
        tx = transaction_record(prepared, effects_data={"dataSource": str(locked.offchain_id), "evaluation": str(row.offchain_id), "round": fields["round"],
                                                        "value": str(fields["mantissa"]), "observedAt": int(fields["observed_at"].timestamp())})
        record_admin_request(tx, row.requested_by)
        _finish(row, EvaluationStatus.SUBMITTED, "", fields, transaction=tx)
        locked.last_evaluation, locked.last_transaction, locked.pending_transaction = row, tx, tx
        locked.save(update_fields=["last_evaluation", "last_transaction", "pending_transaction", "updated_at"])


@worker_only
def _finish(row: DataSourceEvaluation, status: str, error: str, fields: dict, **more) -> None:
    """The row's outcome (it leaves the in-progress states: the source is free again) and,
    for one that sent nothing, the source's last evaluation."""
    now = timezone.now()
    values = {"status": status, "error": error, "claimed_until": None, "updated_at": now, "finished_at": fields.get("finished_at") or now, **fields, **more}
    with db_transaction.atomic():
        DataSourceEvaluation.unscoped.filter(pk=row.pk).update(**values)
        if status != EvaluationStatus.SUBMITTED:
            OnchainDataSource.unscoped.filter(pk=row.data_source_id).update(last_evaluation=row.pk)
    meters.marketdata_evaluations.labels(status).inc()


def evaluation_wait(row: DataSourceEvaluation, level: str) -> DataSourceEvaluation:
    """``?wait=`` of Refresh Oracle Data Source, after its commit: until the worker has
    evaluated ``row``, then until its update reaches ``level`` and (confirmed, finalized)
    its effects are applied — LEDGER_WAIT_TIMEOUT_SECONDS in all; the row as it then is."""
    from transactions.responses import wait_for

    deadline = time.monotonic() + settings.LEDGER_WAIT_TIMEOUT_SECONDS

    def until(done) -> None:
        delay = 0.02
        while True:
            row.refresh_from_db()
            if done() or time.monotonic() >= deadline:
                return
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    until(lambda: row.status not in IN_PROGRESS)
    if row.transaction_id is not None:
        wait_for(row.transaction, level, timeout=max(0.0, deadline - time.monotonic()))
        if level != "submitted":
            until(lambda: row.status != EvaluationStatus.SUBMITTED)
    return row
