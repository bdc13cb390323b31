"""Market data's back-office pages per staff role (docs/marketdata.md, "Back office"): data
source, instrument, evaluations and update transactions linked both ways; the evaluations
list searched, filtered and drawn by date; every role reads, only an operator is offered
"Refresh now"."""

from __future__ import annotations

import pytest

from backoffice.tests.staff import client_for, staff_user
from marketdata.models import EvaluationStatus, EvaluationTrigger, OnchainDataSource
from transactions.models import Transaction, TransactionStatus

from .factories import make_evaluation, make_source

SOURCES, EVALUATIONS = "/admin/marketdata/onchaindatasource/", "/admin/marketdata/datasourceevaluation/"
ROLES = ("viewer", "operator", "approver", "security officer")


def _update(tenant, signature: str) -> Transaction:
    return Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="marketdata.update", status=TransactionStatus.FINALIZED, message=b"",
                                       blockhash="x", fee_payer="x", onchain_id=signature)


@pytest.fixture
def recorded(tenant):
    source = make_source(tenant)
    update = _update(tenant, "update-signature-1")
    confirmed = make_evaluation(source, mantissa=1_250_000_000, round=1, transaction=update)
    failed = make_evaluation(source, status=EvaluationStatus.FAILED, trigger=EvaluationTrigger.ADMIN, requested_by="operator", error="prices.example: 503")
    OnchainDataSource.unscoped.filter(pk=source.pk).update(last_evaluation=confirmed, last_transaction=update)
    other = make_evaluation(make_source(tenant), mantissa=7, round=3)
    return source, update, confirmed, failed, other


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_sources_and_evaluations_and_only_an_operator_may_refresh(client, recorded, role):
    source, _, confirmed, _, _ = recorded
    c = client_for(client, staff_user(role))
    for url in (SOURCES, f"{SOURCES}{source.pk}/change/", EVALUATIONS, f"{EVALUATIONS}{confirmed.pk}/change/"):
        page = c.get(url)
        assert page.status_code == 200, url
        assert 'type="submit" value="Save"' not in page.content.decode() and "deletelink" not in page.content.decode(), url
    assert ("refresh_now" in c.get(SOURCES).content.decode()) is (role == "operator")
    assert 'name="action"' not in c.get(EVALUATIONS).content.decode()  # evaluations have no action
    assert c.post(f"{EVALUATIONS}{confirmed.pk}/change/", {"status": "FAILED"}).status_code == 403
    assert c.post(f"{SOURCES}{source.pk}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.django_db
def test_staff_without_a_role_see_no_market_data(client, recorded):
    source, _, confirmed, _, _ = recorded
    c = client_for(client, staff_user(None, "nobody"))
    for url in (SOURCES, f"{SOURCES}{source.pk}/change/", f"{EVALUATIONS}{confirmed.pk}/change/", f"/admin/chain/marketdata/onchaindatasource/{source.pk}/"):
        assert c.get(url).status_code == 403, url


@pytest.mark.django_db
def test_source_instrument_evaluations_and_update_transactions_link_both_ways(client, recorded):
    source, update, confirmed, failed, other = recorded
    c = client_for(client, staff_user("viewer"))
    page = c.get(f"{SOURCES}{source.pk}/change/").content.decode()
    for target in (f"/admin/instruments/financialinstrument/{source.instrument_id}/change/", f"/admin/accounts/account/{source.authority_account_id}/change/",
                   f"{EVALUATIONS}{confirmed.pk}/change/", f"{EVALUATIONS}{failed.pk}/change/", f"{EVALUATIONS}?data_source__id__exact={source.pk}",
                   f"/admin/transactions/transaction/{update.pk}/change/", f"/admin/transactions/transaction/?signer={source.authority_address}",
                   f"/admin/chain/marketdata/onchaindatasource/{source.pk}/"):
        assert target in page, target
    evaluation = c.get(f"{EVALUATIONS}{confirmed.pk}/change/").content.decode()
    assert f"{SOURCES}{source.pk}/change/" in evaluation and f"/admin/transactions/transaction/{update.pk}/change/" in evaluation and "12.5" in evaluation

    # ... and back: the instrument to its sources, the update transaction to its evaluation.
    instrument = c.get(f"/admin/instruments/financialinstrument/{source.instrument_id}/change/").content.decode()
    assert f"{SOURCES}?instrument__id__exact={source.instrument_id}" in instrument
    shown = c.get(f"{SOURCES}?instrument__id__exact={source.instrument_id}").content.decode()
    assert source.address in shown and other.data_source.address not in shown
    transaction = c.get(f"/admin/transactions/transaction/{update.pk}/change/").content.decode()
    assert f"{EVALUATIONS}?transaction__id__exact={update.pk}" in transaction and f"{SOURCES}?last_transaction__id__exact={update.pk}" in transaction
    shown = c.get(f"{EVALUATIONS}?transaction__id__exact={update.pk}").content.decode()
    assert f"{EVALUATIONS}{confirmed.pk}/change/" in shown and f"{EVALUATIONS}{failed.pk}/change/" not in shown


@pytest.mark.django_db
def test_evaluations_are_searched_filtered_and_drawn_by_date(client, recorded):
    source, update, confirmed, failed, other = recorded
    c = client_for(client, staff_user("viewer"))

    def listed(query: str = "") -> set[int]:
        response = c.get(EVALUATIONS + query)
        assert response.status_code == 200, query
        content = response.content.decode()
        return {e.pk for e in (confirmed, failed, other) if f"{EVALUATIONS}{e.pk}/change/" in content}

    assert listed() == {confirmed.pk, failed.pk, other.pk}
    assert listed("?status__exact=FAILED") == {failed.pk}
    assert listed("?trigger__exact=ADMIN") == {failed.pk}
    assert listed("?transaction__isempty=1") == {failed.pk, other.pk} and listed("?transaction__isempty=0") == {confirmed.pk}
    assert listed(f"?data_source__id__exact={source.pk}") == {confirmed.pk, failed.pk}
    assert listed(f"?q={source.address}") == {confirmed.pk, failed.pk}
    assert listed(f"?q={source.offchain_id}") == {confirmed.pk, failed.pk}
    assert listed(f"?q={confirmed.offchain_id}") == {confirmed.pk}
    assert listed("?q=503") == {failed.pk}
    year, month = confirmed.created_at.year, confirmed.created_at.month
    assert listed(f"?created_at__year={year}&created_at__month={month}") == {confirmed.pk, failed.pk, other.pk}
    assert listed(f"?created_at__year={year - 1}") == set()
    assert f"?created_at__year={year}" in c.get(EVALUATIONS).content.decode()
    assert f"?created_at__year={year}" in c.get(SOURCES).content.decode()
