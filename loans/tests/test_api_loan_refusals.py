"""Refusals through the API on the local node: every bad input is a 400 (403, 404, 409) in
the error shape naming the field, and changes nothing — no record, no transaction, no
token moved on chain. What the program judges (terms, the loan-to-value ratio, debt) comes
back as 400 PROGRAM_ERROR naming the program's error."""

from __future__ import annotations

import uuid

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account
from conftest import assert_error
from loans.models import Loan, LoanStrategy
from positions.models import Position
from transactions.models import Transaction

from .kit import TERMS, call, create_loan, expected, landed, loan_item, strategy, token_balance, world

pytestmark = pytest.mark.chain

ACME = 10**6
USD = 100


def _counts() -> tuple:
    return Loan.unscoped.count(), LoanStrategy.unscoped.count(), Transaction.unscoped.count(), Account.unscoped.count(), Position.unscoped.count()


@pytest.mark.django_db(transaction=True)
def test_create_loan_refusals_name_the_field_and_change_nothing(api, celery_worker_process, chain):
    w = world(api, chain)
    s = strategy(api, w)
    before = _counts(), token_balance(chain, w.borrower_acme["onchainId"])

    def refused(status: int, code: str, field: str, item: dict, **envelope):
        body = assert_error(call(api, "post", "", item, wait=False, **(envelope or w.borrower_pays)), status, code, field)
        assert (_counts(), token_balance(chain, w.borrower_acme["onchainId"])) == before
        return body["errors"][0]["message"]

    good = loan_item(w, s["onchainId"], pledge=100 * ACME, borrow=100 * USD)
    refused(400, "BORROWER_REQUIRED", "svmTransactionConfig.feePayer", good, svmTransactionConfig={})
    refused(400, "INVALID_ENUM", "itemData.defiProtocol", {**good, "defiProtocol": "OTHER"})
    refused(400, "REQUIRED", "itemData.partnerLendingDetails", {k: v for k, v in good.items() if k != "partnerLendingDetails"})
    refused(400, "TOO_LONG", "itemData.partnerLendingDetails.expectedLoanValues.expectedLqt", {**good, "partnerLendingDetails": {
        "loanStrategyAddress": s["onchainId"], "expectedLoanValues": {"expectedApy": 1_000, "expectedLqt": [5_000, 8_000, 9_000]}}})
    refused(400, "STRATEGY_NOT_FOUND", "itemData.partnerLendingDetails.loanStrategyAddress", {**good, "partnerLendingDetails": {
        "loanStrategyAddress": str(Keypair().pubkey()), "expectedLoanValues": expected()}})
    assert "ApyMismatch" in refused(400, "PROGRAM_ERROR", "itemData.partnerLendingDetails.expectedLoanValues.expectedApy", {**good, "partnerLendingDetails": {
        "loanStrategyAddress": s["onchainId"], "expectedLoanValues": {**expected(), "expectedApy": 999}}})
    assert "RatiosMismatch" in refused(400, "PROGRAM_ERROR", "itemData.partnerLendingDetails.expectedLoanValues.expectedLqt", {**good, "partnerLendingDetails": {
        "loanStrategyAddress": s["onchainId"], "expectedLoanValues": expected({**TERMS, "loanToValueRatio": 6_000})}})
    # $600 against $1,000 of collateral is beyond 50 %: the error names the borrowed item whose
    # Borrow crossed it ($100, then $500), not the whole itemData.
    assert "LtvExceeded" in refused(400, "PROGRAM_ERROR", "itemData.itemsToBorrow[0]", loan_item(w, s["onchainId"], pledge=100 * ACME, borrow=600 * USD))
    two = loan_item(w, s["onchainId"], pledge=100 * ACME, borrow=100 * USD)
    two["itemsToBorrow"].append({"positionLookup": w.holding(w.borrower, w.usd), "value": {"lamports": 500 * USD}})
    assert "LtvExceeded" in refused(400, "PROGRAM_ERROR", "itemData.itemsToBorrow[1]", two)
    refused(400, "TOO_MANY_DECIMALS", "itemData.itemsToBorrow[0].value.amount", {**good, "itemsToBorrow": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"amount": "1.001"}}]})
    refused(400, "TOO_SHORT", "itemData.itemsToPledge", {**good, "itemsToPledge": []})
    refused(400, "UNKNOWN_FIELD", "itemData.itemsToPledge[0].colour", {**good, "itemsToPledge": [{**good["itemsToPledge"][0], "colour": "red"}]})
    # The lender's USD position is not the borrower's (one owner across the request's assets).
    refused(400, "OWNER_MISMATCH", "itemData.itemsToPledge[0].positionLookup", {**good, "itemsToPledge": [
        {"positionLookup": {"position": {"offchainId": w.lender_usd["offchainId"]}}, "value": {"lamports": 100}}]})
    refused(404, "NOT_FOUND", "itemData.itemsToPledge[0].positionLookup.position", {**good, "itemsToPledge": [
        {"positionLookup": {"position": {"offchainId": str(uuid.uuid4())}}, "value": {"lamports": 100}}]})
    # The strategy does not lend ACME.
    refused(400, "MINT_NOT_BORROWABLE", "itemData.itemsToBorrow[0].positionLookup", {**good, "itemsToBorrow": [{"positionLookup": w.holding(w.borrower, w.acme), "value": {"lamports": 1}}]})
    # More than the position holds.
    refused(400, "INSUFFICIENT_FUNDS", "itemData.itemsToPledge[0].value", loan_item(w, s["onchainId"], pledge=2_000 * ACME, borrow=100 * USD))


@pytest.mark.django_db(transaction=True)
def test_changes_to_a_loan_are_refused_with_the_field_and_change_nothing(api, approver, celery_worker_process, chain):
    w = world(api, chain)
    s = strategy(api, w)
    loan = landed(create_loan(api, w, s["onchainId"], pledge=100 * ACME, borrow=100 * USD), 201)["newLoan"]
    before = _counts(), token_balance(chain, w.borrower_acme["onchainId"])
    repay = {"positionLookup": w.holding(w.borrower, w.usd), "value": {"lamports": 10 * USD}}

    def refused(path: str, status: int, code: str, field: str, item: dict, **envelope):
        body = assert_error(call(api, "patch", path, {"defiProtocol": "PARTNER_LENDING", "escrow": loan, **item}, wait=False, **envelope), status, code, field)
        assert (_counts(), token_balance(chain, w.borrower_acme["onchainId"])) == before
        return body["errors"][0]["message"]

    refused("/repay", 400, "ITEMS_REQUIRED", "itemData.itemsToRepay", {})
    refused("/repay", 400, "VALUE_REQUIRED", "itemData.itemsToRepay[0].value", {"itemsToRepay": [{"positionLookup": repay["positionLookup"]}]})
    refused("/repay", 400, "ITEM_NOT_FOUND", "itemData.itemsToRepay[0].positionLookup", {"itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.acme), "value": {"lamports": 1}}]})
    refused("/repay", 400, "FEE_PAYER_NOT_BORROWER", "svmTransactionConfig.feePayer", {"itemsToRepay": [repay]}, svmTransactionConfig={"feePayer": w.lender})
    refused("/repay", 400, "INSUFFICIENT_FUNDS", "itemData.itemsToRepay[0].value", {"itemsToRepay": [{**repay, "value": {"lamports": 200 * USD}}]})
    assert "RepayExceedsDebt" in refused("/repay", 400, "PROGRAM_ERROR", "itemData.itemsToRepay[0]", {"itemsToRepay": [{**repay, "value": {"lamports": 200 * USD}, "mintAsset": True}]})
    refused("/repay", 404, "NOT_FOUND", "itemData.escrow", {"escrow": {"offchainId": str(uuid.uuid4())}, "itemsToRepay": [repay]})
    refused("/swap-collateral", 400, "NOT_APPLICABLE", "itemData.itemsToWithdraw[0].mintAsset", {"itemsToWithdraw": [
        {"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"lamports": 1}, "mintAsset": True}]})
    refused("/swap-collateral", 400, "ITEM_NOT_FOUND", "itemData.itemsToWithdraw[0].positionLookup", {"itemsToWithdraw": [
        {"positionLookup": w.holding(w.borrower, w.usd), "value": {"lamports": 1}}]})
    assert "DebtOutstanding" in refused("/close", 400, "PROGRAM_ERROR", "itemData.escrow", {})
    refused("/close", 400, "BORROWER_MISMATCH", "itemData.borrower", {"borrower": w.lender})

    # Repaid transfers are debits of the borrower's position: over its limit the repayment is
    # held for approval, then approved and executed.
    limits = [{"destinationType": "MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 5 * USD}]
    updated = api.call("patch", "/api/v1/positions", {"itemData": {"position": {"owner": w.borrower, "financialInstrument": w.usd}, "tokenDebitLimits": limits}})
    assert updated.status_code == 200, updated.json()
    held = call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToRepay": [repay]}, wait=False)
    assert held.status_code == 200 and held.json()["svmTransaction"]["status"] == "PENDING_APPROVAL", held.json()
    assert "MANAGED" in held.json()["svmTransaction"]["errorMessage"]
    # One change of a loan at a time.
    assert_error(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToRepay": [repay]}, wait=False), 409, "OPERATION_IN_PROGRESS", "itemData.escrow")
    approved = approver.call("patch", "/api/v1/transactions/approve?wait=confirmed", {"itemData": {"transaction": {"offchainId": held.json()["svmTransaction"]["offchainId"]}}})
    assert approved.status_code == 200 and approved.json()["status"] in ("CONFIRMED", "FINALIZED"), approved.json()


@pytest.mark.django_db(transaction=True)
def test_close_built_unsent_and_idempotent_create(api, celery_worker_process, chain):
    w = world(api, chain)
    s = strategy(api, w)
    request_id = uuid.uuid4()
    first = create_loan(api, w, s["onchainId"], pledge=10 * ACME, borrow=10 * USD, request_id=request_id)
    again = create_loan(api, w, s["onchainId"], pledge=10 * ACME, borrow=10 * USD, request_id=request_id)
    assert first.status_code == again.status_code == 201 and again["x-idempotent-replay"] == "true"
    assert again.json()["newLoan"] == first.json()["newLoan"] and Loan.unscoped.count() == 1
    loan = first.json()["newLoan"]
    landed(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.usd), "repayAll": True,
                                                                                                          "mintAsset": True, "value": {"amount": 11}}],
                                        "itemsToRelease": [{"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"amount": 10}}]}))

    # submitTransaction false: built, signed and answered; nothing is sent.
    unsent = call(api, "patch", "/close", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "submitTransaction": False, "transferRentRefundTo": w.lender}, wait=False)
    assert unsent.status_code == 200 and unsent.json()["status"] == "SIGNED" and unsent.json()["serializedMessage"], unsent.json()
    assert chain.get_account_info(Pubkey.from_string(loan["onchainId"])).value is not None
    assert_error(call(api, "patch", "/close", {"defiProtocol": "PARTNER_LENDING", "escrow": loan}, wait=False), 409, "OPERATION_IN_PROGRESS")
    lender = Pubkey.from_string(Account.unscoped.get(offchain_id=w.lender["offchainId"]).address)
    rent, before = chain.get_balance(Pubkey.from_string(loan["onchainId"])).value, chain.get_balance(lender).value
    sent = api.call("patch", "/api/v1/transactions/submit?wait=confirmed", {"itemData": {"transaction": {"offchainId": unsent.json()["offchainId"]}}})
    assert sent.status_code == 200 and sent.json()["status"] in ("CONFIRMED", "FINALIZED"), sent.json()
    assert chain.get_account_info(Pubkey.from_string(loan["onchainId"])).value is None
    assert chain.get_balance(lender).value == before + rent  # transferRentRefundTo received the escrow's rent
    assert call(api, "post", "/single", {"escrow": loan}, wait=False).json()["status"] == "CLOSED"


@pytest.mark.django_db
@pytest.mark.parametrize("liquidation", [5_000, 4_999])
def test_a_strategy_whose_liquidation_ratio_is_not_above_its_ltv_is_refused(api, liquidation):
    """Each ratio alone is in range (the schema says so); the pair is not: a rule of its own
    (RATIOS_OUT_OF_ORDER), before anything is looked up or built."""
    before = _counts()
    item = {"defiProtocol": "PARTNER_LENDING", "lender": {"offchainId": str(uuid.uuid4())},
            "terms": {**TERMS, "loanToValueRatio": 5_000, "liquidationRatio": liquidation}, "pledgeInstruments": [], "borrowInstruments": []}
    assert_error(call(api, "post", "/strategies", item, wait=False), 400, "RATIOS_OUT_OF_ORDER", "itemData.terms.liquidationRatio")
    assert _counts() == before
