"""What confirmed (or failed) market data transactions change in the records
(docs/marketdata.md, "Lifecycle").

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``. The source's
copy of its feed follows the chain: every feed transaction's prefetch reads the feed
account (``needs_accounts``) and the handler copies what the program holds (a read older
than the one the source reflects, ``synced_slot``, changes nothing).
"""

from __future__ import annotations

import uuid

from django.utils import timezone

from ledger_project.metrics import meters
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts

from . import onchain, operations
from .models import DataSourceEvaluation, DataSourceStatus, EvaluationStatus, OnchainDataSource
from .schedule import schedule_switch

# Their own handlers end the mark with the rest of the record's update; the engine ends any left.
marks_in_flight(OnchainDataSource)



def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _source(tx) -> OnchainDataSource | None:
    offchain_id = _uuid(tx.effects.get("dataSource"))
    return OnchainDataSource.unscoped.filter(offchain_id=offchain_id).select_related("schedule").first() if offchain_id else None


@needs_accounts
def feed_accounts(named) -> dict[int, list[str]]:
    wanted = {tx.pk: _uuid(tx.effects.get("dataSource")) for tx, _ in named if tx.operation in operations.ALL}
    if not wanted:
        return {}
    feeds = dict(OnchainDataSource.unscoped.filter(offchain_id__in=[v for v in wanted.values() if v]).values_list("offchain_id", "address"))
    return {pk: [feeds[offchain_id]] for pk, offchain_id in wanted.items() if offchain_id in feeds}


def _sync(source: OnchainDataSource, tx, facts: ConfirmationFacts, **fields) -> None:
    """Copy the feed as the chain holds it, unless the read is older than the one the
    source reflects; ``fields`` are set in any case; the in-flight marker is cleared."""
    updates = {"last_transaction": tx, "updated_at": tx.confirmed_at or timezone.now(), **fields}
    fresh = facts.accounts_slot is not None and (source.synced_slot is None or facts.accounts_slot >= source.synced_slot)
    state = onchain.decode(facts.accounts.get(source.address), source.program_address) if fresh else None
    if state is not None:
        updates.update(onchain.feed_record_fields(state, facts.accounts_slot))
        OnchainDataSource.unscoped.filter(pk=source.pk, last_round__lt=state.round).update(last_round=state.round)
    OnchainDataSource.unscoped.filter(pk=source.pk).update(**updates)
    _clear_in_flight(tx)


def _clear_in_flight(tx) -> None:
    OnchainDataSource.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@effect_handler(operations.CREATE)
def feed_created(tx, facts: ConfirmationFacts) -> None:
    source = _source(tx)
    if source is not None:
        _sync(source, tx, facts, **({"status": DataSourceStatus.ACTIVE} if source.status == DataSourceStatus.PENDING else {}))


@failure_handler(operations.CREATE)
def feed_not_created(tx) -> None:
    """Nothing exists on chain: FAILED (the instrument may get another source), its
    schedule switched off."""
    source = _source(tx)
    if source is None:
        return
    if OnchainDataSource.unscoped.filter(pk=source.pk, status=DataSourceStatus.PENDING).update(status=DataSourceStatus.FAILED):
        schedule_switch(source, enabled=False)
    _clear_in_flight(tx)


def _evaluation_of(tx):
    offchain_id = _uuid(tx.effects.get("evaluation"))
    return DataSourceEvaluation.unscoped.filter(offchain_id=offchain_id) if offchain_id else DataSourceEvaluation.unscoped.none()


@effect_handler(operations.UPDATE)
def feed_updated(tx, facts: ConfirmationFacts) -> None:
    if _evaluation_of(tx).update(status=EvaluationStatus.CONFIRMED, updated_at=timezone.now()):
        meters.marketdata_evaluations.labels(EvaluationStatus.CONFIRMED).inc()
    source = _source(tx)
    if source is not None:
        _sync(source, tx, facts)


@failure_handler(operations.UPDATE)
def feed_not_updated(tx) -> None:
    """The feed kept its value: the evaluation is NOT_LANDED (its value was never written)."""
    if _evaluation_of(tx).update(status=EvaluationStatus.NOT_LANDED, error=f"The update transaction {tx.status.lower()}: the feed kept its value.",
                                 updated_at=timezone.now()):
        meters.marketdata_evaluations.labels(EvaluationStatus.NOT_LANDED).inc()
    _clear_in_flight(tx)


@effect_handler(operations.SET_JOB_HASH)
def job_hash_set(tx, facts: ConfirmationFacts) -> None:
    """The feed states the new job's hash: the source evaluates the new job from now on."""
    source = _source(tx)
    if source is not None:
        _sync(source, tx, facts, job_definition=tx.effects["jobDefinition"], job_hash=tx.effects["jobHash"])


failure_handler(operations.SET_JOB_HASH)(_clear_in_flight)
