"""Loans and market data in headless chromium (issue 18): an operator opens a data source,
runs "Refresh now" through the confirmation page and sees the new evaluation confirm (the
worker evaluates the job against a local price server and updates the feed on the local
node), then opens the feed on the chain, decoded; a viewer reads the loan and data source
pages and is offered no action. Screenshots go to var/screenshots/ (docs/screenshots/ holds
the README's copies)."""

from __future__ import annotations

import pytest

from backoffice.models import AuditKind, StaffAuditEntry
from backoffice.tests.staff import PASSWORD, staff_user
from loans.tests.factories import make_loan, make_strategy
from marketdata.models import DataSourceEvaluation, EvaluationStatus, OnchainDataSource
from marketdata.tests.jobkit import definition, source
from marketdata.tests.kit import PriceServer, created, feed_raw, mantissa, world


@pytest.fixture(autouse=True)
def development_process(settings):
    """Job URLs on this machine are allowed (the test's price server), as in marketdata/tests."""
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_an_operator_refreshes_a_data_source_and_a_viewer_reads_loans_and_sources_with_no_action(page, api, chain, tenant, celery_worker_process):
    operator, viewer = staff_user("operator"), staff_user("viewer")
    strategy = make_strategy(tenant)  # records only (before the API's instruments: the factory numbers its own)
    loan = make_loan(tenant, strategy=strategy)
    with PriceServer("12.5") as prices:
        w = world(api, chain)
        data_source = created(w.create(api, definition(*source(prices.url("/price"))["tasks"])))
        record = OnchainDataSource.unscoped.get(offchain_id=data_source["offchainId"])

        # The viewer reads the loan, its strategy and the data source, and may do nothing.
        page.sign_in(viewer.username, PASSWORD)
        page.open(f"/admin/loans/loan/?q={loan.escrow_address}")
        assert len(page.all("#result_list tbody tr")) == 1 and not page.all("select[name=action]")
        page.click("#result_list tbody tr th a")
        assert loan.escrow_address in page.text() and loan.borrower_address in page.text()
        assert not page.all("input[name=_save]") and not page.all("a.deletelink") and page.all("a.chainlink")
        page.screenshot("loan-page")
        page.click(f"a[href$='/admin/loans/loanstrategy/{strategy.pk}/change/']")  # to its strategy, and back to its loans
        page.click(f"a[href$='/admin/loans/loan/?strategy__id__exact={strategy.pk}']")
        assert loan.escrow_address in page.find("#result_list").text
        page.open("/admin/marketdata/onchaindatasource/")
        assert data_source["onchainId"] in page.find("#result_list").text and not page.all("select[name=action]")
        page.open(f"/admin/marketdata/onchaindatasource/{record.pk}/change/")
        assert data_source["onchainId"] in page.text() and not page.all("input[name=_save]")

        # The operator opens the source, refreshes it through the confirmation page ...
        page.sign_in(operator.username, PASSWORD)
        page.open(f"/admin/marketdata/onchaindatasource/{record.pk}/change/")
        assert "every evaluation" in page.text()
        page.open(f"/admin/marketdata/onchaindatasource/?q={data_source['onchainId']}")
        assert "refresh_now" in page.options("select[name=action]")
        confirmation = page.run_action("refresh_now", rows=[str(record.pk)])
        assert "Refresh now" in confirmation and "signed by the feed's authority" in confirmation and data_source["onchainId"] in confirmation
        page.screenshot("confirm-refresh")
        page.click("#confirm-action")
        assert "1 data source(s): evaluation queued" in page.find(".messagelist").text
        evaluation = DataSourceEvaluation.unscoped.get(data_source=record)  # recorded when queued

        # ... and sees that evaluation confirm on the source's page (the worker's update): its
        # own row, as the page shows CONFIRMED for the source's creation transaction already.
        page.open(f"/admin/marketdata/onchaindatasource/{record.pk}/change/")
        row = page.wait_text_in(f".field-evaluations_recent tr:has(a[href$='/admin/marketdata/datasourceevaluation/{evaluation.pk}/change/'])", "CONFIRMED", timeout=60)
        assert "ADMIN" in row and "12.5" in row
        page.driver.execute_script("arguments[0].scrollIntoView()", page.find(".field-evaluations_recent"))
        page.screenshot("data-source-refreshed")
        evaluation.refresh_from_db()
        assert evaluation.status == EvaluationStatus.CONFIRMED and evaluation.requested_by == operator.username
        page.click(f"a[href$='/admin/marketdata/datasourceevaluation/{evaluation.pk}/change/']")
        assert prices.url("/price") in page.text()
        page.click(f"a[href$='/admin/transactions/transaction/{evaluation.transaction_id}/change/']")  # its update transaction
        assert evaluation.transaction.onchain_id in page.text()

        # The feed on the chain: decoded next to the cluster's raw answer.
        page.open(f"/admin/chain/marketdata/onchaindatasource/{record.pk}/")
        decoded = page.find("#chain-decoded").text
        assert f'"value": {mantissa("12.5")}' in decoded and '"round": 1' in decoded and data_source["onchainId"] in page.find("#chain-locator").text
        page.screenshot("feed-on-the-chain")
    assert feed_raw(chain, data_source["onchainId"])["value"] == mantissa("12.5")
    assert [e.actor for e in StaffAuditEntry.objects.filter(kind=AuditKind.ACTION, action="refresh_now")] == [operator.username]
