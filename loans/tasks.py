"""Celery tasks of the loans area: thin, named, calling services (docs/style.md, "Tasks")."""

from __future__ import annotations

import logging

from celery import shared_task

from chain.errors import ChainUnavailable

from .services.keeper import keeper_clusters, loans_watch

logger = logging.getLogger("ledger.loans")


@shared_task(name="ledger.loans.keeper", acks_late=True, autoretry_for=(ChainUnavailable,), max_retries=2, retry_backoff=True)
def loans_keeper() -> list[dict]:
    """Beat (LEDGER_LOAN_KEEPER_SECONDS): every ACTIVE loan looked at — records caught up with
    the chain, liquidatable loans flagged or liquidated (docs/loans.md, "The keeper"). A
    second run finds nothing new to do: a liquidation sets the loan's in-flight marker."""
    from ledger_project.metrics import meters

    reports = []
    for cluster in keeper_clusters():
        report = loans_watch(cluster=cluster).as_dict()
        for action in meters.KEEPER_ACTIONS:
            done = report.get(action, 0)
            meters.keeper_actions.labels(cluster, action).inc(len(done) if isinstance(done, list) else done)
        reports.append(report)
    for report in reports:
        if report["flagged"] or report["liquidated"] or report["synced"]:
            logger.info("loan keeper: %s", report)
    return reports
