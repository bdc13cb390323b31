"""Back-office: loans and loan strategies listed, searched and filtered, read-only (the
chain's truth as the last confirmed change copied it), per staff role; detail pages linked
both ways; lists at a fixed number of queries; "open on the chain" decoded."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from backoffice.tests.staff import client_for, staff_user
from loans.models import Loan, LoanStatus
from transactions.models import Transaction, TransactionStatus

from .factories import make_loan, make_strategy

LOANS = "/admin/loans/loan/"
STRATEGIES = "/admin/loans/loanstrategy/"
ROLES = ("viewer", "operator", "approver", "security officer")


@pytest.mark.django_db
def test_admin_lists_searches_and_filters_loans_read_only(admin_client, tenant):
    strategy = make_strategy(tenant)
    active = make_loan(tenant, strategy=strategy)
    closed = make_loan(tenant, status=LoanStatus.CLOSED)

    def listed(query: str = "") -> set[str]:
        response = admin_client.get(LOANS + query)
        assert response.status_code == 200
        content = response.content.decode()
        return {loan.escrow_address for loan in (active, closed) if loan.escrow_address in content}

    assert listed() == {active.escrow_address, closed.escrow_address}
    for term in (active.borrower_address, active.escrow_address, active.strategy_address, active.lender_address, active.offchain_id):
        assert listed(f"?q={term}") == {active.escrow_address}, term
    assert listed("?status__exact=CLOSED") == {closed.escrow_address}
    assert listed(f"?strategy__id__exact={strategy.pk}") == {active.escrow_address}
    assert listed(f"?strategy_address={active.strategy_address}") == {active.escrow_address}
    assert listed(f"?strategy_address={closed.strategy_address}") == {closed.escrow_address}
    year, month = active.created_at.year, active.created_at.month
    assert listed(f"?created_at__year={year}&created_at__month={month}") == {active.escrow_address, closed.escrow_address}
    assert listed(f"?created_at__year={year - 1}") == set()
    assert f"?created_at__year={year}" in admin_client.get(LOANS).content.decode()  # the date hierarchy
    form = admin_client.get(f"{LOANS}{active.pk}/change/").content.decode()
    assert active.pledged_items.get().token_account_address in form and 'name="escrow_address"' not in form and 'name="status"' not in form
    assert admin_client.get(f"{LOANS}add/").status_code == 403
    assert admin_client.post(f"{LOANS}{active.pk}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.django_db
def test_admin_lists_strategies_read_only(admin_client, tenant):
    strategy = make_strategy(tenant, liquidation_mode="LIQUIDATE")
    assert strategy.address in admin_client.get(f"{STRATEGIES}?liquidation_mode__exact=LIQUIDATE").content.decode()
    assert strategy.address not in admin_client.get(f"{STRATEGIES}?liquidation_mode__exact=FLAG").content.decode()
    assert strategy.address in admin_client.get(f"{STRATEGIES}?q={strategy.lender_address}").content.decode()
    form = admin_client.get(f"{STRATEGIES}{strategy.pk}/change/").content.decode()
    assert strategy.lender_address in form and 'name="apy_bps"' not in form and 'name="liquidation_mode"' not in form
    assert admin_client.get(f"{STRATEGIES}add/").status_code == 403
    assert admin_client.post(f"{STRATEGIES}{strategy.pk}/change/", {"liquidation_mode": "FLAG"}).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_loans_and_strategies_and_none_changes_them(client, tenant, role):
    strategy = make_strategy(tenant)
    loan = make_loan(tenant, strategy=strategy)
    c = client_for(client, staff_user(role))
    for url in (LOANS, f"{LOANS}{loan.pk}/change/", STRATEGIES, f"{STRATEGIES}{strategy.pk}/change/"):
        page = c.get(url)
        assert page.status_code == 200, url
        content = page.content.decode()
        assert 'name="action"' not in content and 'type="submit" value="Save"' not in content and "deletelink" not in content, url
    assert c.post(f"{LOANS}{loan.pk}/change/", {"status": "CLOSED"}).status_code == 403
    assert c.get(f"{LOANS}add/").status_code == 403 and c.post(f"{STRATEGIES}{strategy.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Loan.unscoped.get(pk=loan.pk).status == LoanStatus.ACTIVE


@pytest.mark.django_db
def test_staff_without_a_role_see_no_loan(client, tenant):
    loan = make_loan(tenant)
    c = client_for(client, staff_user(None, "nobody"))
    assert c.get(LOANS).status_code == 403 and c.get(f"{LOANS}{loan.pk}/change/").status_code == 403
    assert c.get(f"/admin/chain/loans/loan/{loan.pk}/").status_code == 403


@pytest.mark.django_db
def test_loan_pages_link_accounts_positions_strategy_and_transactions_both_ways(client, tenant):
    strategy = make_strategy(tenant)
    created = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="loans.create", status=TransactionStatus.FINALIZED, message=b"",
                                          blockhash="x", fee_payer="x", onchain_id="loan-creation-signature")
    loan = make_loan(tenant, strategy=strategy, lender=strategy.lender, creation_transaction=created, last_transaction=created)
    pledged, borrowed = loan.pledged_items.get(), loan.borrowed_items.get()
    c = client_for(client, staff_user("viewer"))
    page = c.get(f"{LOANS}{loan.pk}/change/").content.decode()
    for target in (f"/admin/accounts/account/{loan.escrow_account_id}/change/", f"/admin/accounts/account/{loan.borrower_id}/change/",
                   f"/admin/accounts/account/{strategy.lender_id}/change/", f"{STRATEGIES}{strategy.pk}/change/",
                   f"/admin/transactions/transaction/{created.pk}/change/", f"/admin/positions/position/{pledged.position_id}/change/",
                   f"/admin/positions/position/{borrowed.position_id}/change/", f"/admin/instruments/financialinstrument/{pledged.instrument_id}/change/",
                   f"/admin/transactions/transaction/?signer={loan.borrower_address}", f"/admin/chain/loans/loan/{loan.pk}/"):
        assert target in page, target

    # ... and back: each record links to the list of its loans, which holds this one.
    backlinks = {
        f"/admin/accounts/account/{loan.escrow_account_id}/change/": f"{LOANS}?escrow_account__id__exact={loan.escrow_account_id}",
        f"/admin/accounts/account/{loan.borrower_id}/change/": f"{LOANS}?borrower__id__exact={loan.borrower_id}",
        f"/admin/accounts/account/{strategy.lender_id}/change/": f"{LOANS}?lender__id__exact={strategy.lender_id}",
        f"{STRATEGIES}{strategy.pk}/change/": f"{LOANS}?strategy__id__exact={strategy.pk}",
        f"/admin/transactions/transaction/{created.pk}/change/": f"{LOANS}?creation_transaction__id__exact={created.pk}",
        f"/admin/positions/position/{pledged.position_id}/change/": f"{LOANS}?position={pledged.position_id}",
        f"/admin/positions/position/{borrowed.position_id}/change/": f"{LOANS}?position={borrowed.position_id}",
    }
    other = make_loan(tenant)
    for record, listing in backlinks.items():
        assert listing in c.get(record).content.decode(), record
        shown = c.get(listing).content.decode()
        assert loan.escrow_address in shown and other.escrow_address not in shown, listing
    strategy_page = c.get(f"{STRATEGIES}{strategy.pk}/change/").content.decode()
    assert f"/admin/accounts/account/{strategy.account_id}/change/" in strategy_page and f"/admin/chain/loans/loanstrategy/{strategy.pk}/" in strategy_page
    assert f"/admin/transactions/transaction/?signer={strategy.lender_address}" in strategy_page
    assert c.get(f"{LOANS}?position=not-a-number").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("url", [LOANS, STRATEGIES])
def test_the_lists_cost_the_same_queries_for_two_rows_or_twelve(client, tenant, url):
    c = client_for(client, staff_user(None, "root", superuser=True))
    make = (lambda: make_loan(tenant, strategy=make_strategy(tenant))) if url == LOANS else (lambda: make_strategy(tenant))

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert c.get(url).status_code == 200
        return len(captured)

    for _ in range(2):
        make()
    queries()  # fills the caches of filter values and the date hierarchy's first year
    few = queries()
    for _ in range(10):
        make()
    assert queries() == few <= 8
