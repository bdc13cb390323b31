"""Back-office: loans and loan strategies listed, searched and filtered, read-only (the
chain's truth as the last confirmed change copied it)."""

from __future__ import annotations

import pytest

from loans.models import LoanStatus

from .factories import make_loan, make_strategy

LOANS = "/admin/loans/loan/"
STRATEGIES = "/admin/loans/loanstrategy/"


@pytest.mark.django_db
def test_admin_lists_searches_and_filters_loans_read_only(admin_client, tenant):
    active = make_loan(tenant)
    closed = make_loan(tenant, status=LoanStatus.CLOSED)

    def listed(query: str = "") -> set[str]:
        content = admin_client.get(LOANS + query).content.decode()
        return {loan.escrow_address for loan in (active, closed) if loan.escrow_address in content}

    assert listed() == {active.escrow_address, closed.escrow_address}
    assert listed(f"?q={active.borrower_address}") == {active.escrow_address}
    assert listed("?status__exact=CLOSED") == {closed.escrow_address}
    form = admin_client.get(f"{LOANS}{active.pk}/change/").content.decode()
    assert active.pledged_items.get().token_account_address in form and 'name="escrow_address"' not in form and 'name="status"' not in form
    assert admin_client.get(f"{LOANS}add/").status_code == 403
    assert admin_client.post(f"{LOANS}{active.pk}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.django_db
def test_admin_lists_strategies_read_only(admin_client, tenant):
    strategy = make_strategy(tenant, liquidation_mode="LIQUIDATE")
    assert strategy.address in admin_client.get(f"{STRATEGIES}?liquidation_mode__exact=LIQUIDATE").content.decode()
    assert strategy.address not in admin_client.get(f"{STRATEGIES}?liquidation_mode__exact=FLAG").content.decode()
    form = admin_client.get(f"{STRATEGIES}{strategy.pk}/change/").content.decode()
    assert strategy.lender_address in form and 'name="apy_bps"' not in form and 'name="liquidation_mode"' not in form
    assert admin_client.get(f"{STRATEGIES}add/").status_code == 403
