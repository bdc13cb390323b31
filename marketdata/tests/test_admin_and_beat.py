"""Market data in the back office and on beat: "refresh now" goes through the API's service
(confirmation page, audit, the transaction records the staff user); a source's schedule is
a periodic task that beat runs, its results and evaluations visible in the admin; lists
cost the same queries for 2 rows or 12."""

from __future__ import annotations

import html

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import PeriodicTask
from django_celery_results.models import TaskResult

from conftest import LOCAL_WEBHOOK_ENV
from backoffice.models import AuditKind, StaffAuditEntry
from backoffice.tests.staff import client_for, staff_user
from backoffice.tests.test_on_the_chain import run
from marketdata.models import DataSourceEvaluation, EvaluationStatus, OnchainDataSource
from marketdata.tests.jobkit import definition, source
from tests.workers import wait_for, worker_with_beat
from transactions.models import TransactionEvent

from .factories import make_evaluation, make_source
from .kit import PriceServer, created, feed_raw, mantissa, world

SOURCES, EVALUATIONS = "/admin/marketdata/onchaindatasource/", "/admin/marketdata/datasourceevaluation/"


def single(server: PriceServer) -> str:
    return definition(*source(server.url("/price"))["tasks"])


def _evaluations(data_source: dict, **filters):
    return DataSourceEvaluation.unscoped.filter(data_source__offchain_id=data_source["offchainId"], **filters)


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_refresh_now_in_the_admin_goes_through_the_service_and_is_audited(api, client, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("12.5") as prices:
        data_source = created(w.create(api, single(prices)))
        pk = OnchainDataSource.unscoped.get(offchain_id=data_source["offchainId"]).pk

        # A viewer is offered no action, and a forged POST runs none.
        viewer = client_for(client, staff_user("viewer"))
        assert "refresh_now" not in viewer.get(SOURCES).content.decode()
        viewer.post(SOURCES, {"action": "refresh_now", "_selected_action": [pk], "index": "0", "_staff_confirmed": "yes"})
        assert not _evaluations(data_source).exists()

        operator = client_for(client, staff_user("operator"))
        done = run(operator, SOURCES, "refresh_now", [pk])
        assert "1 data source(s): evaluation queued" in done
        wait_for(lambda: _evaluations(data_source, status=EvaluationStatus.CONFIRMED).exists(), timeout=30, what="the admin's evaluation confirmed")
        evaluation = _evaluations(data_source).get()
        assert evaluation.trigger == "ADMIN" and evaluation.requested_by == "operator" and evaluation.round == 1
        assert feed_raw(chain, data_source["onchainId"])["value"] == mantissa("12.5")
        tx = evaluation.transaction
        assert tx.created_by_key is None and TransactionEvent.objects.get(transaction=tx, kind="REQUESTED_IN_ADMIN").detail == {"user": "operator"}
        assert StaffAuditEntry.objects.filter(kind=AuditKind.ACTION, actor="operator", action="refresh_now", model="marketdata.onchaindatasource").exists()

        # The source's page: the feed's copy read-only, the evaluation listed; the chain's own answer.
        page = operator.get(f"{SOURCES}{pk}/change/").content.decode()
        assert data_source["onchainId"] in page and "ADMIN" in page and "CONFIRMED" in page and 'name="address"' not in page
        assert prices.url("/price") in operator.get(f"{EVALUATIONS}{evaluation.pk}/change/").content.decode()
        answer = operator.get(f"/admin/chain/marketdata/onchaindatasource/{pk}/").content.decode()
        assert data_source["onchainId"] in answer and "PriceFeed1111111111111111111111111111111111" in answer
        # ... decoded by programs/price_feed/client.decode_feed next to the raw answer.
        answer = html.unescape(answer)
        assert 'id="chain-decoded"' in answer and '"round": 1' in answer and f'"value": {mantissa("12.5")}' in answer and "chain-decode-error" not in answer


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_beat_refreshes_each_source_on_its_schedule_and_the_admin_shows_it(api, client, chain, localnet_url, tmp_path):
    with worker_with_beat(localnet_url, tmp_path, LOCAL_WEBHOOK_ENV), PriceServer("99") as prices:
        w = world(api, chain)
        data_source = created(w.create(api, single(prices), refresh=1))
        record = OnchainDataSource.unscoped.get(offchain_id=data_source["offchainId"])
        task = PeriodicTask.objects.get(pk=record.schedule_id)
        assert task.task == "ledger.marketdata.refresh_data_source" and task.enabled and task.interval.every == 1

        wait_for(lambda: _evaluations(data_source, trigger="SCHEDULE", status=EvaluationStatus.CONFIRMED).count() >= 2, timeout=90, what="two scheduled refreshes")
        rounds = list(_evaluations(data_source, status=EvaluationStatus.CONFIRMED).order_by("pk").values_list("round", flat=True))
        assert rounds == sorted(set(rounds)) and rounds[0] == 1  # strictly increasing
        assert feed_raw(chain, data_source["onchainId"])["round"] >= 2
        wait_for(lambda: TaskResult.objects.filter(task_name="ledger.marketdata.refresh_data_source", status="SUCCESS").exists(), timeout=30, what="a stored result")

        viewer = client_for(client, staff_user("viewer"))
        page = viewer.get(f"{SOURCES}{record.pk}/change/").content.decode()
        assert task.name in page and "SCHEDULE" in page
        assert "SCHEDULE" in viewer.get(f"{EVALUATIONS}?data_source__id__exact={record.pk}").content.decode()
        assert task.name in viewer.get("/admin/django_celery_beat/periodictask/").content.decode()
        assert "ledger.marketdata.refresh_data_source" in viewer.get("/admin/django_celery_results/taskresult/").content.decode()

        # On demand only from now on: the periodic task is switched off, beat stops.
        answer = api.call("patch", "/api/v1/market-data/onchain-data-source", {"itemData": {"onchainDataSource": data_source,
                                                                                           "partnerOracleDetails": {"refreshIntervalSeconds": None}}})
        assert answer.status_code == 200, answer.json()
        assert not PeriodicTask.objects.get(pk=task.pk).enabled


@pytest.mark.django_db
@pytest.mark.parametrize("url", [SOURCES, EVALUATIONS])
def test_the_lists_cost_the_same_queries_for_two_rows_or_twelve(client, tenant, url):
    c = client_for(client, staff_user(None, "root", superuser=True))

    def make(i: int) -> None:
        made = make_source(tenant)
        if url == EVALUATIONS:
            make_evaluation(made, mantissa=i, round=i)
        else:
            OnchainDataSource.unscoped.filter(pk=made.pk).update(last_evaluation=make_evaluation(made))

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert c.get(url).status_code == 200
        return len(captured)

    for i in range(2):
        make(i)
    queries()  # fills the caches of filter values and the date hierarchy's first year
    few = queries()
    for i in range(2, 12):
        make(i)
    assert queries() == few
