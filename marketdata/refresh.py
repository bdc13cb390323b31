"""Refresh Oracle Data Source: evaluate a data source's job and send the value to its feed
(docs/marketdata.md, "Refresh"). One function for the API, the back office's "refresh
now" and the scheduled worker task.

1. **Claim** (a conditional UPDATE of ``refresh_claimed_until``, a lease as long as an
   evaluation can take): a beat tick, a request and an admin action never evaluate one
   source at once; a second one finds the claim taken (409 OPERATION_IN_PROGRESS; the
   worker skips the tick). The claim is released once the update is built (step 4).
2. **Evaluate** the job (marketdata.jobs: one deadline, LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS;
   outbound calls under the webhook URL rules). No value → the evaluation is recorded
   FAILED and nothing is sent: **a failed evaluation never writes a value**.
3. **Round**: the next round, handed out under the source's row lock past the last one
   handed out and the feed's (rounds only grow; a number that is not sent leaves a gap,
   which the program allows). The observation time is the evaluation's end.
4. **Build** the program's Update signed by the feed's authority, simulated: a refusal
   (the program's error, e.g. AuthorityMismatch when someone handed the feed to another
   authority) is recorded REJECTED, nothing sent.
5. **Write phase**: the evaluation SUBMITTED with its transaction, the source's in-flight
   marker set; on confirmation CONFIRMED and the source's copy of the feed updated
   (effects.py), on failure NOT_LANDED.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db_transaction
from django.db.models import Q
from django.utils import timezone
from solders.pubkey import Pubkey

from accounts.locks import ensure_no_operation_in_flight
from ledger_project.api.errors import ConflictError, LedgerError
from ledger_project.api.idempotency import write_phase
from marketdata.jobs import MantissaError, evaluate, parse_job, to_mantissa
from programs.price_feed import client
from tenancy.scoping import worker_only
from transactions.chain.errors import ProgramError
from transactions.services import transaction_record

from . import onchain
from .locks import lock_source
from .models import DataSourceEvaluation, DataSourceStatus, EvaluationStatus, EvaluationTrigger, OnchainDataSource
from .services import SOURCE_FIELD, SourceResult, authority_signer, build, record_admin_request

logger = logging.getLogger("ledger.marketdata")


def refreshable(source: OnchainDataSource, field: str = SOURCE_FIELD) -> OnchainDataSource:
    """An ACTIVE source with no change of its feed in flight (400 / 409 otherwise)."""
    if source.status != DataSourceStatus.ACTIVE:
        raise LedgerError(f"The data source is {source.status}: only an ACTIVE one is refreshed.", field=field, code="DATA_SOURCE_NOT_ACTIVE")
    ensure_no_operation_in_flight(source, field=field)
    return source


def _claim_seconds() -> float:
    # The evaluation's deadline plus its grace, then a build and a simulation.
    return settings.LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS + settings.LEDGER_RPC_TIMEOUT_SECONDS * 3 + 5


def _claim(tenant, source: OnchainDataSource) -> bool:
    now = timezone.now()
    mine = OnchainDataSource.objects.for_tenant(tenant).filter(pk=source.pk)
    free = Q(refresh_claimed_until__isnull=True) | Q(refresh_claimed_until__lt=now)
    return mine.filter(free).update(refresh_claimed_until=now + timedelta(seconds=_claim_seconds())) == 1


def _release(tenant, source: OnchainDataSource) -> None:
    OnchainDataSource.objects.for_tenant(tenant).filter(pk=source.pk).update(refresh_claimed_until=None)


@dataclass
class _Outcome:
    """What an evaluation came to before its write phase: ``prepared`` the signed update
    to record, or ``status`` and ``error`` of one that sends nothing."""

    facts: dict
    status: str = EvaluationStatus.SUBMITTED
    error: str = ""
    prepared: object | None = None


def _error_text(errors: list[str]) -> str:
    return "; ".join(errors)[:2000]


def data_source_refresh(*, tenant, source: OnchainDataSource, trigger: str, api_key=None, request_id=None, requested_by: str = "",
                        svm_config: dict | None = None) -> SourceResult:
    """Evaluate ``source``'s job now and, with a value, send it to the feed (the module
    docstring). Returns the source, the update's transaction (None when nothing was sent)
    and the evaluation record, whatever its status."""
    refreshable(source)
    if not _claim(tenant, source):
        raise ConflictError("A refresh of this data source is running; retry once it ends.", field=SOURCE_FIELD, code="OPERATION_IN_PROGRESS")
    try:
        outcome = _evaluate_and_build(tenant, source, trigger=trigger, requested_by=requested_by, svm_config=svm_config)
    finally:
        # Released before the write phase, outside any database transaction (a request's
        # write phase stays open until its answer is stored, and a 4xx would roll a release
        # inside it back). The write phase re-checks the round under the row lock.
        _release(tenant, source)
    if outcome.prepared is None:
        return _record(tenant, source, outcome)
    facts, prepared = outcome.facts, outcome.prepared
    with write_phase(on_abort=prepared.release):
        locked = refreshable(lock_source(source.pk, tenant=tenant))
        if locked.last_round != facts["round"]:
            raise ConflictError("Another update of this feed was handed a later round meanwhile; retry.", field=SOURCE_FIELD, code="OPERATION_IN_PROGRESS")
        row = _evaluation(locked, facts, EvaluationStatus.SUBMITTED)
        tx = transaction_record(prepared, effects_data={"dataSource": str(locked.offchain_id), "evaluation": str(row.offchain_id), "round": facts["round"],
                                                        "value": str(facts["mantissa"]), "observedAt": int(facts["observed_at"].timestamp())},
                                api_key=api_key, request_id=request_id)
        record_admin_request(tx, requested_by)
        row.transaction = tx
        row.save()
        locked.last_evaluation, locked.last_transaction, locked.pending_transaction = row, tx, tx
        locked.save(update_fields=["last_evaluation", "last_transaction", "pending_transaction", "updated_at"])
    return SourceResult(locked, tx, row)


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


def _evaluate_and_build(tenant, source: OnchainDataSource, *, trigger: str, requested_by: str, svm_config: dict | None) -> _Outcome:
    """Network phase: evaluate, hand out the round, build / simulate / sign the Update."""
    started = timezone.now()
    evaluation = evaluate(parse_job(source.job_definition), timeout_seconds=settings.LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS)
    finished = timezone.now()
    facts = {"trigger": trigger, "job_hash": source.job_hash, "started_at": started, "finished_at": finished, "record": evaluation.to_record(),
             "requested_by": requested_by or ""}
    if not evaluation.ok or evaluation.result is None:
        return _Outcome(facts, EvaluationStatus.FAILED, _error_text(evaluation.errors) or "The job produced no value.")
    try:
        facts["mantissa"] = to_mantissa(evaluation.result, source.exponent)
    except MantissaError as exc:
        return _Outcome(facts, EvaluationStatus.FAILED, f"The result does not fit the feed: {exc}.")
    try:
        signer = authority_signer(tenant, source)
    except LedgerError as exc:  # the authority account was inactivated, or its key may not be used
        return _Outcome(facts, EvaluationStatus.REJECTED, f"{exc.code}: {exc.message}")
    facts["observed_at"] = finished.replace(microsecond=0)
    facts["round"] = _allocate_round(tenant, source)
    instruction = client.update(Pubkey.from_string(source.program_address), feed=Pubkey.from_string(source.address), authority=signer.pubkey,
                                round=facts["round"], value=facts["mantissa"], observed_at=int(facts["observed_at"].timestamp()))
    try:
        prepared = build(tenant=tenant, cluster=source.cluster, operation="marketdata.update", instructions=[instruction], signers=[signer], svm_config=svm_config)
    except ProgramError as exc:
        if exc.failure.name == "OutOfOrder":
            _resync_round(tenant, source)
        return _Outcome(facts, EvaluationStatus.REJECTED, exc.message)
    except LedgerError as exc:
        if exc.status_code >= 500:
            raise  # the chain did not answer: nothing was decided, nothing is recorded
        return _Outcome(facts, EvaluationStatus.REJECTED, f"{exc.code}: {exc.message}")
    return _Outcome(facts, prepared=prepared)


def _evaluation(source: OnchainDataSource, facts: dict, status: str, error: str = "") -> DataSourceEvaluation:
    return DataSourceEvaluation(tenant_id=source.tenant_id, cluster=source.cluster, data_source=source, status=status, error=error,
                                trigger=facts["trigger"], job_hash=facts["job_hash"], started_at=facts["started_at"], finished_at=facts["finished_at"],
                                record=facts["record"], requested_by=facts["requested_by"], mantissa=facts.get("mantissa"), round=facts.get("round"),
                                observed_at=facts.get("observed_at"))


def _record(tenant, source: OnchainDataSource, outcome: _Outcome) -> SourceResult:
    """An evaluation that sent nothing (FAILED, REJECTED): recorded, the source's last."""
    with write_phase():
        row = _evaluation(source, outcome.facts, outcome.status, outcome.error)
        row.save()
        OnchainDataSource.objects.for_tenant(tenant).filter(pk=source.pk).update(last_evaluation=row, updated_at=timezone.now())
    source.last_evaluation = row
    logger.info("data source %s: evaluation %s (%s)", source.offchain_id, outcome.status, outcome.error[:300])
    return SourceResult(source, None, row)


@worker_only  # the scheduled task: acts for the source's own organization
def data_source_refresh_scheduled(*, data_source_id: int) -> str:
    """The periodic task's work: refresh the source if it is ACTIVE and free; a tick that
    finds it busy (a refresh running, its feed changing) or not ACTIVE does nothing."""
    source = OnchainDataSource.unscoped.select_related("tenant", "authority_account__managed_key", "authority_key", "pending_transaction").filter(pk=data_source_id).first()
    if source is None:
        return "skipped: no such data source"
    try:
        result = data_source_refresh(tenant=source.tenant, source=source, trigger=EvaluationTrigger.SCHEDULE)
    except (ConflictError, LedgerError) as exc:
        if exc.status_code >= 500:
            raise
        return f"skipped: {exc.code}"
    evaluation = result.evaluation
    return f"{evaluation.status} round={evaluation.round} mantissa={evaluation.mantissa}" if evaluation.round else f"{evaluation.status}: {evaluation.error[:200]}"
