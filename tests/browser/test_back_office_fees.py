"""The Platform-paid fees page in headless chromium (issue 35): a viewer finds an
organization's fees of the last 24 hours — what the platform's fee payer paid for its
transactions (meta.fee) and what it may still pay (in flight) — against the budget, and can
change nothing there (docs/admin.md, "Platform-paid fees")."""

from __future__ import annotations

import pytest

from backoffice.tests.staff import PASSWORD, staff_user
from transactions import fees
from transactions.models import Transaction
from transactions.tests.chainkit import wallet


@pytest.fixture(autouse=True)
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    fees.platform_fees_cache_clear()


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_a_viewer_reads_an_organizations_platform_paid_fees_and_changes_nothing(page, api, tenant, other_tenant, celery_worker_process, chain):
    source, destination = wallet(api, 10**9), wallet(api, 1_000_000)
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": 1_000}}}
    response = api.call("post", "/api/v1/positions/transfer-network-currency?wait=confirmed", body)
    assert response.status_code == 200, response.json()
    landed = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    assert landed.platform_paid and landed.fee
    spent = fees.platform_fees_spent(tenant, "CHAIN_LOCALNET")

    viewer = staff_user("viewer")
    page.sign_in(viewer.username, PASSWORD)
    page.open("/admin/")
    page.click("a[href$='/admin/transactions/organizationplatformfees/']")
    rows = page.find("#result_list").text
    assert tenant.external_id in rows and other_tenant.external_id in rows
    assert f"CHAIN_LOCALNET: {spent:,} lamports" in rows and "1,000,000,000 lamports" in rows  # the budget
    assert not page.all("select[name=action]") and not page.all("a.addlink")
    page.screenshot("platform-paid-fees")
    page.click(f"a[href$='/admin/transactions/organizationplatformfees/{tenant.pk}/change/']")
    text = page.text()
    assert f"{spent:,} lamports" in text and "landed (meta.fee)" in text.lower()
    assert not page.all("input[name=_save]") and not page.all("a.deletelink")
