"""Refusals of the market data endpoints: bad input is a 400 naming the field (a bad job
names the bad task's path) and changes nothing; one active source per instrument and kind
(409); a refresh needs an ACTIVE source, and one at a time."""

from __future__ import annotations

import json

import pytest
from django_celery_beat.models import PeriodicTask

from conftest import assert_error
from marketdata.models import DataSourceEvaluation, OnchainDataSource
from marketdata.tests.jobkit import definition, http, median, parse, source
from positions.tests.kit import wallet
from tests.workers import paused_workers
from transactions.models import Transaction

from .factories import JOB, make_source
from .kit import call, world

pytestmark = pytest.mark.chain

DETAILS = "itemData.partnerOracleDetails"
GOOD = {"defiProtocol": "PARTNER_ORACLE", "partnerOracleDetails": {"kind": "QUOTES", "jobDefinition": JOB}}


def _counts():
    return OnchainDataSource.unscoped.count(), DataSourceEvaluation.unscoped.count(), Transaction.unscoped.count(), PeriodicTask.objects.count()


def _item(instrument: dict, **changes) -> dict:
    item = json.loads(json.dumps({**GOOD, "financialInstrument": instrument}))
    for path, value in changes.items():
        node, *keys = path.split("__")
        target = item if not keys else item.setdefault(node, {})
        target[keys[-1] if keys else node] = value
    return item


BAD = [
    ({"partnerOracleDetails__jobDefinition": "{not json"}, "INVALID_JOB_DEFINITION", f"{DETAILS}.jobDefinition"),
    ({"partnerOracleDetails__jobDefinition": definition({"fetchTask": {}})}, "INVALID_JOB_DEFINITION", f"{DETAILS}.jobDefinition.tasks[0].fetchTask"),
    ({"partnerOracleDetails__jobDefinition": definition(median(source("https://prices.example/a"), {"tasks": [http("http://10.0.0.8/price"), parse()]}))},
     "URL_NOT_ALLOWED", f"{DETAILS}.jobDefinition.tasks[0].medianTask.jobs[1].tasks[0].httpTask.url"),
    ({"partnerOracleDetails__exponent": 19}, "OUT_OF_RANGE", f"{DETAILS}.exponent"),
    ({"partnerOracleDetails__maxStalenessSeconds": 0}, "OUT_OF_RANGE", f"{DETAILS}.maxStalenessSeconds"),
    ({"partnerOracleDetails__refreshIntervalSeconds": 0}, "OUT_OF_RANGE", f"{DETAILS}.refreshIntervalSeconds"),
    ({"partnerOracleDetails__kind": "BONDS"}, "INVALID_ENUM", f"{DETAILS}.kind"),
    ({"defiProtocol": "PARTNER_LENDING"}, "INVALID_ENUM", "itemData.defiProtocol"),
    ({"dataDetails": {"kind": "RATING"}}, "INVALID_ENUM", "itemData.dataDetails.kind"),
    ({"alreadyOnchain": True}, "REQUIRED", "itemData.existingOnchainDataSourceAccount"),
    ({"existingOnchainDataSourceAccount": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}}, "CONFLICTING_FIELDS",
     "itemData.existingOnchainDataSourceAccount"),
    ({"dataSourceKind": "PRICE"}, "UNKNOWN_FIELD", "itemData.dataSourceKind"),
    ({"financialInstrument": None}, "REQUIRED", "itemData.financialInstrument"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("changes, code, field", BAD, ids=[f"{c}:{f.rsplit('.', 1)[-1]}" for _, c, f in BAD])
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(api, tenant, changes, code, field):
    from instruments.tests.factories import FinancialInstrumentFactory

    instrument = {"offchainId": str(FinancialInstrumentFactory(tenant=tenant).offchain_id)}
    before = _counts()
    assert_error(call(api, "post", "", _item(instrument, **changes)), 400, code, field)
    assert _counts() == before


@pytest.mark.django_db
def test_an_authority_whose_key_the_service_does_not_hold_is_refused(api, tenant):
    from instruments.tests.factories import FinancialInstrumentFactory

    instrument = {"offchainId": str(FinancialInstrumentFactory(tenant=tenant).offchain_id)}
    outsider = wallet(api, managed=False, address="9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
    before = _counts()
    assert_error(call(api, "post", "", {**_item(instrument), "oracleDataSourceAuthority": outsider}), 400, "AUTHORITY_NOT_MANAGED", "itemData.oracleDataSourceAuthority")
    assert _counts() == before


@pytest.mark.django_db(transaction=True)
def test_one_active_source_per_instrument_and_kind(api, chain, celery_worker_process):
    w = world(api, chain)
    with paused_workers():  # PENDING counts as live: no confirmation needed here
        first = call(api, "post", "", w.item(JOB, refresh=60), svmTransactionConfig={"feePayer": w.funder})
        assert first.status_code == 200, first.json()
        before = _counts()
        assert_error(call(api, "post", "", w.item(JOB), svmTransactionConfig={"feePayer": w.funder}), 409, "DATA_SOURCE_EXISTS", "itemData.financialInstrument")
        assert _counts() == before
        ours = OnchainDataSource.unscoped.get(offchain_id=first.json()["newOnchainDataSource"]["offchainId"])
        OnchainDataSource.unscoped.filter(pk=ours.pk).update(status="ACTIVE")  # as its confirmation would
        lookup = {"onchainDataSource": first.json()["newOnchainDataSource"]}

        # INACTIVE: kept, no longer refreshed; the instrument may get another source.
        answer = call(api, "patch", "", {**lookup, "status": "INACTIVE"})
        assert answer.status_code == 200 and answer.json()["svmTransaction"] is None, answer.json()
        assert ours.schedule_id and not PeriodicTask.objects.get(pk=ours.schedule_id).enabled
        assert_error(call(api, "patch", "/refresh", lookup), 400, "DATA_SOURCE_NOT_ACTIVE", "itemData.onchainDataSource")
        second = call(api, "post", "", w.item(JOB), svmTransactionConfig={"feePayer": w.funder})
        assert second.status_code == 200, second.json()
        # Active again while the other is live: 409, nothing changed.
        assert_error(call(api, "patch", "", {**lookup, "status": "ACTIVE"}), 409, "DATA_SOURCE_EXISTS")
        assert OnchainDataSource.unscoped.get(pk=ours.pk).status == "INACTIVE"


@pytest.mark.django_db
def test_one_refresh_at_a_time(api, tenant):
    data_source = make_source(tenant)
    lookup = {"onchainDataSource": {"onchainId": data_source.address}}
    with paused_workers():  # the queued evaluation waits for a worker
        queued = call(api, "patch", "/refresh", lookup)
        assert queued.status_code == 200, queued.json()
        body = queued.json()
        assert body["evaluation"]["status"] == "REQUESTED" and body["evaluation"]["trigger"] == "API" and body["svmTransaction"] is None
        assert_error(call(api, "patch", "/refresh", lookup), 409, "OPERATION_IN_PROGRESS", "itemData.onchainDataSource")
    assert DataSourceEvaluation.unscoped.filter(data_source=data_source).count() == 1


@pytest.mark.django_db
def test_a_refresh_request_is_idempotent(api, tenant):
    data_source = make_source(tenant)
    lookup = {"onchainDataSource": {"offchainId": str(data_source.offchain_id)}}
    with paused_workers():
        first = call(api, "patch", "/refresh", lookup, request_id="7d3c1f5e-2f7a-4b8e-9a52-3c1d2e4f5a6b")
        again = call(api, "patch", "/refresh", lookup, request_id="7d3c1f5e-2f7a-4b8e-9a52-3c1d2e4f5a6b")
    assert first.status_code == again.status_code == 200 and again["x-idempotent-replay"] == "true"
    assert first.content == again.content
    assert DataSourceEvaluation.unscoped.filter(data_source=data_source).count() == 1


@pytest.mark.django_db
def test_lookups_name_a_source_of_the_organization(api, tenant, other_tenant):
    mine, theirs = make_source(tenant), make_source(other_tenant)
    assert_error(call(api, "post", "/single", {"onchainDataSource": {}}), 400, "INVALID_LOOKUP")
    assert_error(call(api, "post", "/single", {"onchainDataSource": {"onchainId": theirs.address}}), 404, "NOT_FOUND", "itemData.onchainDataSource")
    assert_error(call(api, "post", "/single", {"onchainDataSource": {"onchainId": mine.address, "offchainId": str(theirs.offchain_id)}}), 404, "CONFLICTING_LOOKUP")
