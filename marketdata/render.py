"""How the market data answers show a data source (docs/marketdata.md, "Fetch Onchain Data
Source Details"); the serializers in serializers.py are the schema of the same fields."""

from __future__ import annotations

from decimal import Decimal

from accounts.render import uuid_text
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text

from .models import DEFI_PROTOCOL, DataSourceEvaluation, OnchainDataSource, joined_errors
from .onchain import at, price
from .schedule import interval_of


@renders("marketdata.serializers.DataSourceIdentifiersOutput")
def identifiers(source: OnchainDataSource) -> dict:
    """The data source: its feed account's address and its offchainId."""
    return {"onchainId": source.address, "offchainId": uuid_text(source.offchain_id)}


def _transaction(tx) -> dict | None:
    if tx is None:
        return None
    # A transaction held for approval keeps its signature undisclosed (positions/limits.py).
    return {"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": uuid_text(tx.offchain_id)}


def _decimal(text) -> Decimal | None:
    return None if text in (None, "") else Decimal(str(text))


def _errors(e: DataSourceEvaluation, record: dict) -> list[str]:
    """The record's errors, and the evaluation's own error when it says something else (a
    refusal, the result not fitting the feed) — not when it is those errors joined (a job
    that gave no value), which would repeat them."""
    errors = list(record.get("errors") or [])
    if e.error and e.error not in errors and e.error != joined_errors(errors):
        errors.append(e.error)
    return errors


@renders("marketdata.serializers.EvaluationOutput")
def evaluation(e: DataSourceEvaluation | None, exponent: int) -> dict | None:
    """An evaluation record: what each source answered, the result, what was written."""
    if e is None:
        return None
    record = e.record or {}
    return {
        "offchainId": uuid_text(e.offchain_id),
        "status": e.status,
        "trigger": e.trigger,
        "requestedAt": timestamp_text(e.created_at),
        "startedAt": timestamp_text(e.started_at),
        "finishedAt": timestamp_text(e.finished_at),
        "result": _decimal(record.get("result")),
        "value": price(e.mantissa, exponent) if e.mantissa is not None else None,
        "mantissa": int(e.mantissa) if e.mantissa is not None else None,
        "round": e.round,
        "observedAt": timestamp_text(e.observed_at),
        "jobHash": e.job_hash,
        "sources": [{**s, "value": _decimal(s.get("value"))} for s in record.get("sources") or []],
        "errors": _errors(e, record),
        "transaction": _transaction(e.transaction),
    }


def recorded_feed(source: OnchainDataSource) -> dict | None:
    """The feed as the source's record copied it after its last confirmed change."""
    if source.synced_slot is None:
        return None
    return {
        "readFrom": "RECORD", "readAtSlot": source.synced_slot, "round": int(source.onchain_round),
        "value": price(source.onchain_value, source.exponent) if source.onchain_round else None,
        "mantissa": int(source.onchain_value), "exponent": source.exponent, "observedAt": timestamp_text(source.onchain_observed_at),
        "updatedAt": timestamp_text(source.onchain_updated_at), "slot": source.onchain_slot, "jobHash": source.onchain_job_hash,
    }


def live_feed(source: OnchainDataSource, state, slot: int | None) -> dict | None:
    """The feed as the chain holds it now (``state``: a decoded feed, None when absent)."""
    if state is None:
        return None
    return {
        "readFrom": "CHAIN", "readAtSlot": slot, "round": state.round, "value": state.price if state.round else None,
        "mantissa": state.value, "exponent": state.exponent, "observedAt": timestamp_text(at(state.observed_at)),
        "updatedAt": timestamp_text(at(state.unix_time)), "slot": state.slot or None, "jobHash": state.job_hash.hex(),
        "authority": str(state.authority), "mint": str(state.mint), "maxStalenessSeconds": state.max_staleness,
        "recent": [{"round": r.round, "value": price(r.value, state.exponent), "mantissa": r.value, "observedAt": timestamp_text(at(r.observed_at)), "slot": r.slot}
                   for r in state.ring],
    }


@renders("marketdata.serializers.DataSourceCompactOutput")
def compact(source: OnchainDataSource) -> dict:
    last = source.last_evaluation
    return {
        **identifiers(source),
        "status": source.status,
        "financialInstrument": {"onchainId": source.instrument.address, "offchainId": uuid_text(source.instrument.offchain_id)},
        "kind": source.data_kind,
        "value": price(source.onchain_value, source.exponent) if source.onchain_round else None,
        "round": int(source.onchain_round),
        "lastUpdateAt": timestamp_text(source.onchain_updated_at),
        "lastEvaluationStatus": last.status if last is not None else None,
    }


_RECORDED = object()


@renders("marketdata.serializers.DataSourceOutput")
def detailed(source: OnchainDataSource, *, live=_RECORDED) -> dict:
    """The data source; ``live``: the feed read from the chain now (Fetch Onchain Data
    Source Details; None when no feed is there), else the record's copy (bulk pages read
    no chain)."""
    instrument, account = source.instrument, source.authority_account
    return {
        **identifiers(source),
        "status": source.status,
        "defiProtocol": DEFI_PROTOCOL,
        "wasAlreadyOnchain": source.was_onchain_already,
        "partnerOracleDetails": {
            "kind": source.oracle_kind, "jobDefinition": source.job_definition, "jobHash": source.job_hash, "exponent": source.exponent,
            "maxStalenessSeconds": source.max_staleness_seconds, "refreshIntervalSeconds": interval_of(source),
        },
        "dataDetails": {"kind": source.data_kind, "ratingProvider": source.rating_provider or None},
        "financialInstrument": {"onchainId": instrument.address, "offchainId": uuid_text(instrument.offchain_id), "alId": instrument.al_id or None},
        "oracleDataSourceAuthority": {"onchainId": source.authority_address, "offchainId": uuid_text(account.offchain_id) if account is not None else None},
        "program": {"onchainId": source.program_address},
        "onchainValue": recorded_feed(source) if live is _RECORDED else live,
        "lastEvaluation": evaluation(source.last_evaluation, source.exponent),
        "lastUpdateAt": timestamp_text(source.onchain_updated_at),
        "createdAt": timestamp_text(source.created_at),
        "creationTransaction": _transaction(source.creation_transaction),
        "lastTransaction": _transaction(source.last_transaction),
    }


RENDERERS = {"detailed": detailed, "compact": compact, "identifiers": identifiers}
