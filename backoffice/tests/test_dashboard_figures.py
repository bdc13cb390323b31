"""The dashboard's webhook backlog counts only what will be sent (events of disabled webhooks
are paused, shown apart), and its plots of the last 24 hours are drawn from the database
(docs/admin.md, "Dashboard")."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from backoffice.models import BalanceSample
from backoffice.plots import _percentile, confirmations, plots
from transactions.models import Transaction, TransactionStatus
from webhooks.tests.webhookkit import emit, recorded_transaction, subscribe
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookEvent, WebhookStatus, WebhookSubscription

from .staff import client_for, staff_user


@pytest.fixture
def local_receivers(settings):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.mark.django_db
def test_events_of_disabled_webhooks_are_paused_not_a_backlog(client, tenant, local_receivers):
    enabled, disabled = subscribe(tenant, "http://127.0.0.1:9/a"), subscribe(tenant, "http://127.0.0.1:9/b")
    emit([recorded_transaction(tenant) for _ in range(2)])  # 2 events for each webhook
    eleven_minutes_ago = timezone.now() - timedelta(minutes=11)
    WebhookEvent.unscoped.update(next_attempt_at=eleven_minutes_ago)
    WebhookSubscription.unscoped.filter(pk=disabled.pk).update(status=WebhookStatus.DISABLED)

    viewer = client_for(client, staff_user("viewer"))
    response = viewer.get("/admin/")
    panel = response.context["dashboard"]["webhooks"]

    assert (panel["pending"], panel["due"], panel["paused"], panel["disabled"]) == (2, 2, 2, 1)
    assert 600 < panel["lag_seconds"] < 700
    html = response.content.decode()
    assert 'id="webhook-pending">2<' in html and 'id="webhook-paused">2<' in html
    # Only paused ones left: nothing is due, nothing reads like an outage.
    WebhookEvent.unscoped.filter(subscription=enabled).update(status=DeliveryStatus.DELIVERED)
    panel = viewer.get("/admin/").context["dashboard"]["webhooks"]
    assert (panel["pending"], panel["due"], panel["lag_seconds"], panel["paused"]) == (0, 0, 0, 2)
    # The links open the lists of what they count.
    assert viewer.get(panel["paused_url"]).status_code == 200 and viewer.get(panel["pending_url"]).status_code == 200


@pytest.mark.django_db
def test_plots_show_the_last_day_from_the_database(client, tenant, local_receivers):
    now = timezone.now()
    for minutes_ago, latency in ((5, 2.0), (5, 4.0), (6, 3.0), (125, 10.0), (60 * 30, 1.0)):  # the last one is older than a day
        tx = recorded_transaction(tenant)
        confirmed = now - timedelta(minutes=minutes_ago)
        Transaction.unscoped.filter(pk=tx.pk).update(status=TransactionStatus.CONFIRMED, confirmed_at=confirmed, txn_timestamp=confirmed - timedelta(seconds=latency))
    subscribe(tenant, "http://127.0.0.1:9/a")
    [event] = emit([recorded_transaction(tenant)])
    for number, code in ((1, 503), (2, 200)):
        WebhookAttempt.objects.create(event=event, number=number, started_at=now - timedelta(minutes=3), latency_ms=12, status_code=code)
    for hours_ago, sol in ((20, 3), (2, 2.5)):
        BalanceSample.objects.create(cluster="CHAIN_LOCALNET", account="fee_payer", lamports=int(sol * 1e9), at=now - timedelta(hours=hours_ago))

    html = client_for(client, staff_user("viewer")).get("/admin/").content.decode()

    points = dict(re.findall(r'<svg id="(plot-[a-z-]+)" class="plot" data-points="(\d+)"', html))
    # minutes with confirmations: 3 (-5, -6, -125 min); p50 and p99 in 2 or 3 ten-minute buckets
    # each; deliveries: delivered and failed in one bucket; fee payer: 2 samples.
    assert points["plot-confirmed"] == "3" and int(points["plot-latency"]) in (4, 6) and points["plot-webhooks"] == "2" and points["plot-fee-payer"] == "2"
    assert "<script" not in html.split('id="ops-plots"')[1].split("</div>")[0]


@pytest.mark.django_db
def test_latency_percentiles_per_ten_minutes(tenant):
    now = timezone.now()
    start = now - timedelta(minutes=9)
    for latency in (1, 2, 3, 4, 100):
        tx = recorded_transaction(tenant)
        Transaction.unscoped.filter(pk=tx.pk).update(confirmed_at=now, txn_timestamp=now - timedelta(seconds=latency))
    per_minute, p50, p99 = confirmations(start)
    assert sum(v for _, v in per_minute.points) == 5
    [(_, median)] = p50.points
    [(_, tail)] = p99.points
    assert median == pytest.approx(3.0) and tail == pytest.approx(_percentile([1, 2, 3, 4, 100], 0.99)) and tail > 90
    assert len(plots()) == 4
