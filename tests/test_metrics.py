"""GET /metrics (docs/operations.md, "Metrics"; who may scrape: docs/auth.md, "Metrics"):
counters moved by real traffic — a transfer confirmed on the local node by a real worker,
a webhook delivered and one failed — by exactly what happened; scrape-time figures read
from the database; who may read it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, transfer
from tests.metricskit import moved, scrape, value
from webhooks import delivery
from webhooks.tests.webhookkit import Receiver, emit, recorded_transaction, subscribe

CLUSTER = "CHAIN_LOCALNET"


@pytest.fixture
def local_receivers(settings, monkeypatch):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setattr(delivery, "delivery_kick", lambda: None)  # this process delivers


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_counters_move_by_what_real_traffic_did(api, client, celery_worker_process, local_receivers, tenant, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    authority, sender, receiver = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    source, destination = position(api, sender, bond), position(api, receiver, bond)
    settled(mint(api, at(source), {"lamports": 1_000_000}))
    before = scrape(client)

    settled(transfer(api, at(source), at(destination), {"lamports": 7}, request_id=uuid.uuid4()))

    # The request, by its route pattern and status; the worker's pump sent it once and saw it
    # confirm; the RPC client counted the node's calls by method.
    route = {"method": "POST", "route": "api/v1/positions/transfer"}
    assert value(scrape(client), "ledger_http_requests_total", **route, status=200) - value(before, "ledger_http_requests_total", **route, status=200) == 1
    assert moved(client, before, "ledger_http_request_duration_seconds_count", 1, **route) == 1
    assert moved(client, before, "ledger_transaction_submissions_total", 1, cluster=CLUSTER) == 1
    assert moved(client, before, "ledger_transaction_confirmation_seconds_count", 1, cluster=CLUSTER) == 1
    after = scrape(client)
    took = value(after, "ledger_transaction_confirmation_seconds_sum", cluster=CLUSTER) - value(before, "ledger_transaction_confirmation_seconds_sum", cluster=CLUSTER)
    assert 0 < took < 60
    assert value(after, "ledger_rpc_calls_total", cluster=CLUSTER, method="simulateTransaction", outcome="ok") > value(before, "ledger_rpc_calls_total", cluster=CLUSTER, method="simulateTransaction", outcome="ok")
    assert value(after, "ledger_rpc_calls_total", cluster=CLUSTER, method="getSignatureStatuses") > value(before, "ledger_rpc_calls_total", cluster=CLUSTER, method="getSignatureStatuses")
    assert value(after, "ledger_transaction_failures_total") == value(before, "ledger_transaction_failures_total")
    assert not any("http" in v for (n, labels) in after for k, v in labels if n.startswith("ledger_rpc"))  # no URL in a label

    # A webhook delivered, one failed (retried later): the two outcomes, the attempt times,
    # and the delivery latency of the one delivered.
    with Receiver(status=200) as ok, Receiver(status=503) as down:
        subscribe(tenant, ok.url("/hook"))
        subscribe(tenant, down.url("/hook"))
        before = scrape(client)
        assert value(before, "ledger_webhook_backlog", state="due") == 0
        emit([recorded_transaction(tenant)])
        assert value(scrape(client), "ledger_webhook_backlog", state="due") == 2
        outcomes = delivery.deliver_due()
    assert sorted(o.status_code for o in outcomes) == [200, 503]
    after = scrape(client)
    for name, expected in (("delivered", 1), ("failed", 1), ("dead_lettered", 0)):
        assert value(after, "ledger_webhook_deliveries_total", outcome=name) - value(before, "ledger_webhook_deliveries_total", outcome=name) == expected, name
    assert value(after, "ledger_webhook_attempt_duration_seconds_count") - value(before, "ledger_webhook_attempt_duration_seconds_count") == 2
    assert value(after, "ledger_webhook_delivery_latency_seconds_count") - value(before, "ledger_webhook_delivery_latency_seconds_count") == 1
    assert value(after, "ledger_webhook_backlog", state="due") == 0 and value(after, "ledger_webhook_backlog", state="scheduled") == 1


@pytest.mark.django_db
def test_state_is_read_from_the_database_when_scraped(client, tenant, settings):
    from backoffice.heartbeat import heartbeat_stamp
    from backoffice.models import BalanceSample
    from transactions.models import Transaction, TransactionStatus
    from webhooks.models import WebhookStatus, WebhookSubscription

    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    old = timezone.now() - timedelta(minutes=11)
    queued = recorded_transaction(tenant)
    Transaction.unscoped.filter(pk=queued.pk).update(status=TransactionStatus.SIGNED, submit_when_signed=True, txn_timestamp=old)
    sent = recorded_transaction(tenant)
    Transaction.unscoped.filter(pk=sent.pk).update(status=TransactionStatus.SUBMITTED, submitted_at=old)
    # Events of a disabled webhook are paused, not due: they will not be sent.
    paused = subscribe(tenant, "http://127.0.0.1:9/hook")
    emit([recorded_transaction(tenant)])
    WebhookSubscription.unscoped.filter(pk=paused.pk).update(status=WebhookStatus.DISABLED)
    BalanceSample.objects.create(cluster=CLUSTER, account="fee_payer", lamports=5_000_000, at=timezone.now() - timedelta(minutes=2))
    BalanceSample.objects.create(cluster=CLUSTER, account="fee_payer", lamports=4_000_000, at=timezone.now())
    heartbeat_stamp("worker")

    samples = scrape(client)

    assert value(samples, "ledger_transactions", cluster=CLUSTER, status="SIGNED") == 1
    assert value(samples, "ledger_transactions", cluster=CLUSTER, status="SUBMITTED") == 1
    assert value(samples, "ledger_pump_backlog", cluster=CLUSTER) == 1
    assert 600 < value(samples, "ledger_pump_oldest_queued_age_seconds", cluster=CLUSTER) < 700
    assert 600 < value(samples, "ledger_pump_oldest_in_flight_age_seconds", cluster=CLUSTER) < 700
    assert value(samples, "ledger_webhook_backlog", state="paused") == 1
    assert value(samples, "ledger_webhook_backlog", state="due") == 0 and value(samples, "ledger_webhook_oldest_due_age_seconds") == 0
    assert value(samples, "ledger_platform_balance_lamports", cluster=CLUSTER, account="fee_payer") == 4_000_000  # the latest sample
    assert value(samples, "ledger_fee_payer_low_lamports") == settings.LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS
    assert value(samples, "ledger_heartbeat_age_seconds", process="worker") < 60
    assert ("ledger_heartbeat_age_seconds", frozenset({("process", "beat")})) not in samples  # never seen: absent, and alerted on
    assert all(v == 1 for (n, _), v in samples.items() if n == "ledger_scrape_source_up")
    # No tenant, address or signature in any label.
    labels = {v for (_, ls) in samples for _, v in ls}
    assert not labels & {tenant.external_id, queued.onchain_id, queued.fee_payer, str(queued.offchain_id)}


@pytest.mark.django_db
def test_only_the_metrics_token_or_an_allowed_network_may_scrape(client, api, settings):
    settings.LEDGER_METRICS_ALLOWED_NETWORKS = []
    settings.LEDGER_METRICS_TOKEN = "mtk_" + "x" * 40
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics").headers["WWW-Authenticate"].startswith("Bearer")
    assert api.get("/metrics").status_code == 401  # a tenant's API key is not a scraper's token
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer mtk_" + "y" * 40).status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.LEDGER_METRICS_TOKEN}").status_code == 200
    settings.LEDGER_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401  # no token configured: none matches
    settings.LEDGER_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.1").status_code == 401
    assert client.post("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 405


@pytest.mark.django_db
def test_routes_are_url_patterns_never_paths(client):
    from django.urls import reverse

    from tests.metricskit import families

    before = scrape(client)
    for _ in range(3):
        client.get(f"/api/v1/no-such-thing/{uuid.uuid4()}")
    client.get(reverse("admin:transactions_transaction_change", args=[12345]))  # redirects to sign-in
    after = scrape(client)
    assert value(after, "ledger_http_requests_total", route="unmatched", status=404) - value(before, "ledger_http_requests_total", route="unmatched", status=404) == 3
    routes = {v for (n, ls) in after for k, v in ls if n == "ledger_http_requests_total" and k == "route"}
    assert any("<path:object_id>" in r for r in routes) and not any("12345" in r or "no-such-thing" in r for r in routes)
    assert "ledger_http_request_duration_seconds_bucket" in families(after)


@pytest.mark.django_db
def test_an_rpc_endpoint_that_does_not_answer_counts_as_unavailable(client, settings):
    from chain.errors import ChainUnavailable
    from chain.rpc import ChainRpc
    from localnet.testing import free_port

    # Every HTTP attempt is counted: two attempts (the chain client's retry: chain/transport.py).
    settings.LEDGER_RPC_MAX_ATTEMPTS, settings.LEDGER_RPC_RETRY_BASE_SECONDS = 2, 0.01
    rpc = ChainRpc("CHAIN_NOWHERE", f"http://127.0.0.1:{free_port()}/?api-key=secret", 2)
    before = scrape(client)
    with pytest.raises(ChainUnavailable):
        rpc.slot()
    after = scrape(client)
    labels = {"cluster": "CHAIN_NOWHERE", "method": "getSlot"}
    assert value(after, "ledger_rpc_calls_total", **labels, outcome="unavailable") - value(before, "ledger_rpc_calls_total", **labels, outcome="unavailable") == 2
    assert value(after, "ledger_rpc_duration_seconds_count", **labels) - value(before, "ledger_rpc_duration_seconds_count", **labels) == 2
    # No URL or key in any label (a route such as /api/v1/webhooks/signing-secret may well be).
    assert not any("api-key" in v or "://" in v or "127.0.0.1" in v for (_, ls) in after for _, v in ls)


@pytest.mark.chain
@pytest.mark.django_db
def test_the_worker_samples_the_fee_payer_balance_from_the_node(client, localnet_url):
    from backoffice.balances import balances_sample
    from transactions import fee_payers
    from chain.rpc import rpc_for

    payer = fee_payers.platform_fee_payer(CLUSTER).pubkey
    assert balances_sample() >= 1
    lamports = rpc_for(CLUSTER).balance(payer)
    assert value(scrape(client), "ledger_platform_balance_lamports", cluster=CLUSTER, account="fee_payer") == lamports > 0


def _counter_file(folder, pid: int, value: float) -> None:
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    counts = MmapedDict(str(folder / f"counter_{pid}.db"))
    counts.write_value(mmap_key("ledger_test", "ledger_test_total", [], [], "test"), value, 0.0)
    counts.close()


def _total(folder) -> float:
    from prometheus_client import CollectorRegistry, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(folder))
    return registry.get_sample_value("ledger_test_total") or 0.0


def test_a_recycled_worker_is_folded_into_the_archive_and_a_fresh_start_clears_the_dead(tmp_path, monkeypatch):
    import os
    import subprocess

    from ledger_project.metrics import multiproc

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    ended = [subprocess.Popen(["true"]) for _ in range(2)]
    for process in ended:
        process.wait()
    first, second = (p.pid for p in ended)
    _counter_file(tmp_path, os.getpid(), 5)
    _counter_file(tmp_path, first, 3)
    from prometheus_client.mmap_dict import MmapedDict

    MmapedDict(str(tmp_path / f"gauge_livesum_{first}.db")).close()
    assert _total(tmp_path) == 8

    # gunicorn's child_exit: its count stays in the sum, its files go (gauges included).
    assert multiproc.process_dead(first) == 2
    assert _total(tmp_path) == 8
    assert sorted(p.name for p in tmp_path.glob("*.db")) == [f"counter_{os.getpid()}.db", "counter_archive.db"]

    # A start beside a live process: only dead processes' files go, the archive stays.
    _counter_file(tmp_path, second, 4)
    me = os.getpid()
    monkeypatch.setattr(multiproc, "_alive", lambda pid: pid == me)
    monkeypatch.setattr(os, "getpid", lambda: 1)  # the cleaner is another process: this test's is alive beside it
    assert multiproc.directory_clean(tmp_path) == 1
    assert _total(tmp_path) == 8
    monkeypatch.undo()
    # A fresh start (no other process alive): the archive goes too; counters start again.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert multiproc.directory_clean(tmp_path) == 1
    assert _total(tmp_path) == 5
