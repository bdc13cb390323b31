"""Fetch Loans (spec, Loans 3): every fieldName the spec lists filters, status ASC is the
default sort, item fields match any item of a loan and do not sort, another organization's
loans are never listed; the page is the loan response of each."""

from __future__ import annotations

import pytest

from accounts.tests.factories import AccountFactory
from conftest import assert_error
from loans.models import LoanStatus
from loans.selectors import LOAN_QUERY

from .factories import make_loan

URL = "/api/v1/loans/bulk"


def _page(api, *filters, sort=None, **query) -> list[str]:
    item_query = {"filter": [{"fieldName": name, "filterValues": [value]} for name, value in filters], **query}
    if sort:
        item_query["sort"] = sort
    response = api.call("post", URL, {"itemQuery": item_query})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["count"] >= len(body["items"])
    return [item["offchainId"] for item in body["items"]]


def _text(value: str, data_type: str = "TEXT") -> dict:
    return {"dataType": data_type, "filterType": "EQUALS", "valueString": value}


@pytest.mark.django_db
def test_every_field_name_filters_and_status_sorts_by_default(api, tenant, other_tenant, localnet_url):
    lender = AccountFactory(tenant=tenant)
    active = make_loan(tenant, lender=lender)
    closed = make_loan(tenant, status=LoanStatus.CLOSED, pledged=50, due=20, duration_unit=60)
    repaid = make_loan(tenant, status=LoanStatus.REPAID)
    make_loan(other_tenant)  # never listed
    ids = lambda *loans: [str(loan.offchain_id) for loan in loans]  # noqa: E731

    assert _page(api) == ids(active, closed, repaid)  # status ASC: ACTIVE, CLOSED, REPAID
    assert _page(api, sort=[{"fieldName": "status", "sortDirection": "DESC"}]) == ids(repaid, closed, active)
    assert _page(api, ("status", _text("CLOSED"))) == ids(closed)
    pledged, borrowed = closed.pledged_items.get(), closed.borrowed_items.get()
    onchain = [("escrowOnchainId", closed.escrow_address), ("borrowerOnchainId", closed.borrower_address), ("lenderOnchainId", closed.lender_address),
               ("pledgedItemOnchainId", pledged.token_account_address), ("borrowedItemOnchainId", borrowed.position.address)]
    for name, value in onchain:
        assert _page(api, (name, _text(value, "ONCHAIN_ADDRESS_ID"))) == ids(closed), name
    offchain = [("escrowOffchainId", closed.offchain_id), ("borrowerOffchainId", closed.borrower.offchain_id),
                ("pledgedItemOffchainId", pledged.position.account.offchain_id), ("borrowedItemOffchainId", borrowed.position.account.offchain_id)]
    for name, value in offchain:
        assert _page(api, (name, _text(str(value), "OFFCHAIN_ID"))) == ids(closed), name
    assert _page(api, ("lenderOffchainId", _text(str(lender.offchain_id), "OFFCHAIN_ID"))) == ids(active)
    assert _page(api, ("lenderOffchainId", {"dataType": "OFFCHAIN_ID", "filterType": "IS_NULL"})) == ids(closed, repaid)
    assert _page(api, ("pledgedItemAmount", {"dataType": "NUMBER", "filterType": "RANGE", "valueToNumber": "60"})) == ids(closed)
    assert _page(api, ("borrowedItemDueAmount", {"dataType": "NUMBER", "filterType": "EQUALS", "valueNumber": "400"})) == ids(active, repaid)
    assert _page(api, ("loanDurationCode", _text("DAYS"))) == ids(active, closed, repaid)
    assert _page(api, ("loanDurationUnit", {"dataType": "NUMBER", "filterType": "EQUALS", "valueNumber": 60})) == ids(closed)
    assert set(LOAN_QUERY.fields) == {
        "status", "escrowOnchainId", "borrowerOnchainId", "lenderOnchainId", "pledgedItemOnchainId", "borrowedItemOnchainId", "escrowOffchainId", "borrowerOffchainId",
        "lenderOffchainId", "pledgedItemOffchainId", "borrowedItemOffchainId", "pledgedItemAmount", "borrowedItemDueAmount", "loanDurationCode", "loanDurationUnit",
    }
    assert _page(api, limit=1, skip=1) == ids(closed)


@pytest.mark.django_db
def test_items_are_loan_responses_and_bad_queries_name_the_field(api, tenant, localnet_url):
    loan = make_loan(tenant)
    body = api.call("post", URL, {"itemQuery": {}}).json()
    item = body["items"][0]
    assert list(item)[:7] == ["status", "escrow", "borrower", "lender", "pledgedItems", "borrowedItems", "marketData"]
    assert item["escrow"]["onchain"]["id"] == loan.escrow_address and item["escrow"]["offchain"]["type"] == "LOAN_ESCROW"
    assert item["lender"] == {"onchain": {"id": loan.lender_address, "lastTransactionId": None, "lastTransactionAt": None, "creationTransactionId": None,
                                          "creationTransactionAt": None}, "offchain": None, "managed": False, "status": None}
    assert item["pledgedItems"][0]["pledgedAmount"] == 100 and item["borrowedItems"][0]["principalDue"] == 400
    assert item["borrowedItems"][0]["duration"] == {"code": "DAYS", "unit": 30} and item["marketData"][0]["price"] is None
    assert body["count"] == 1
    assert_error(api.call("post", URL, {"itemQuery": {"filter": [{"fieldName": "colour", "filterValues": [_text("red")]}]}}), 400, "UNKNOWN_FIELD_NAME", "itemQuery.filter[0].fieldName")
    assert_error(api.call("post", URL, {"itemQuery": {"sort": [{"fieldName": "pledgedItemAmount"}]}}), 400, "NOT_SORTABLE", "itemQuery.sort[0].fieldName")
    assert_error(api.call("post", URL, {"itemQuery": {"filter": [{"fieldName": "status", "filterValues": [_text("x", "NUMBER")]}]}}), 400, "INVALID_DATA_TYPE",
                 "itemQuery.filter[0].filterValues[0].dataType")
