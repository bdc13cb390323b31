"""The dashboard's plots of the last 24 hours in headless chromium (docs/admin.md,
"Dashboard"): after real activity — transfers confirmed on the local node by a real worker,
a webhook delivered and one failed against local receivers, the fee payer's balance sampled
from the node — a viewer sees the four plots with points, and the page logs no script
error."""

from __future__ import annotations

import pytest

from backoffice.balances import balances_sample
from backoffice.tests.staff import PASSWORD, staff_user
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, transfer
from webhooks import delivery
from webhooks.tests.webhookkit import Receiver, emit, recorded_transaction, subscribe


@pytest.mark.django_db(transaction=True)
def test_a_viewer_sees_the_last_day_as_plots_with_points(page, api, tenant, celery_worker_process, settings, monkeypatch):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setattr(delivery, "delivery_kick", lambda: None)  # this process delivers
    authority, sender, receiver = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    source, destination = position(api, sender, bond), position(api, receiver, bond)
    settled(mint(api, at(source), {"lamports": 1_000}))
    for amount in (1, 2):
        settled(transfer(api, at(source), at(destination), {"lamports": amount}))
    with Receiver(status=200) as ok, Receiver(status=503) as down:
        subscribe(tenant, ok.url("/hook"))
        subscribe(tenant, down.url("/hook"))
        emit([recorded_transaction(tenant)])
        assert sorted(o.status_code for o in delivery.deliver_due()) == [200, 503]
    assert balances_sample() >= 1  # the fee payer, read from the node by the worker's task
    staff_user("viewer", "plots-viewer")

    page.sign_in("plots-viewer", PASSWORD)
    page.open("/admin/")
    page.find("#ops-plots")

    plots = {svg.get_attribute("id"): svg for svg in page.all("#ops-plots svg.plot")}
    assert set(plots) == {"plot-confirmed", "plot-latency", "plot-webhooks", "plot-fee-payer"}
    for name, svg in plots.items():
        points = svg.find_elements("css selector", ".pt")
        assert int(svg.get_attribute("data-points")) == len(points) > 0, name
        assert svg.size["width"] > 300 and svg.size["height"] > 80, name  # drawn, not collapsed
    assert "Confirmed transactions per minute" in page.text() and "no data in the last 24 hours" not in page.text()
    # Script errors only: the browser's own request for /favicon.ico (404) is not the page's.
    errors = [entry for entry in page.driver.get_log("browser") if entry["level"] == "SEVERE" and entry.get("source") != "network"]
    assert not errors, errors
    page.screenshot("dashboard-plots")
