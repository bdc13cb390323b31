"""Data source and evaluation records with nothing on chain (tenancy cases, bulk pages,
admin lists)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from solders.keypair import Keypair

from accounts.tests.factories import AccountFactory
from instruments.tests.factories import FinancialInstrumentFactory
from marketdata.jobs import job_hash
from marketdata.models import DataSourceEvaluation, DataSourceStatus, EvaluationStatus, EvaluationTrigger, OnchainDataSource
from marketdata.tests.jobkit import definition, source
from programs.price_feed.client import LOCALNET_PROGRAM_ID

JOB = definition(*source("https://prices.example/acme")["tasks"])


def make_source(tenant, *, instrument=None, status: str = DataSourceStatus.ACTIVE, **fields) -> OnchainDataSource:
    """An ACTIVE PRICE source of a fresh instrument, its authority an account of the tenant."""
    instrument = instrument or FinancialInstrumentFactory(tenant=tenant)
    authority = fields.pop("authority_account", None) or AccountFactory(tenant=tenant)
    values = {"address": str(Keypair().pubkey()), "program_address": str(LOCALNET_PROGRAM_ID), "mint_address": instrument.address,
              "authority_address": authority.address, "authority_account": authority, "job_definition": JOB, "job_hash": job_hash(JOB).hex(),
              "exponent": -8, "max_staleness_seconds": 300, **fields}
    return OnchainDataSource.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", instrument=instrument, status=status, **values)


def make_evaluation(data_source: OnchainDataSource, *, status: str = EvaluationStatus.CONFIRMED, **fields) -> DataSourceEvaluation:
    now = timezone.now()
    values = {"trigger": EvaluationTrigger.SCHEDULE, "job_hash": data_source.job_hash, "started_at": now - timedelta(seconds=1), "finished_at": now,
              "record": {"ok": True, "result": "1.5", "sources": [], "errors": []}, **fields}
    return DataSourceEvaluation.unscoped.create(tenant=data_source.tenant, cluster=data_source.cluster, data_source=data_source, status=status, **values)
