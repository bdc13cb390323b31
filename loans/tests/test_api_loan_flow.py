"""A loan through the API on the local node (genesis lending and price_feed programs) with a
real worker: a strategy prepared by its lender, a loan against feed-valued collateral,
partial then full repayment, the collateral released and the loan closed with its rent
refunded; balances checked with an unmodified solana-py client, the escrow decoded from the
chain, and `reconcile` finding no drift afterwards."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from solders.pubkey import Pubkey
from solders.signature import Signature

from accounts.models import Account, AccountStatus, AccountType
from loans.models import Loan, LoanStatus
from positions.models import Position, PositionStatus
from positions.tests.movekit import mint, settled
from programs.lending import client as lend

from .kit import address_of, call, create_loan, details, landed, strategy, token_balance, world

pytestmark = pytest.mark.chain

LENDING = lend.LOCALNET_PROGRAM_ID
ACME = 10**6  # one ACME bond in base units
USD = 100  # one USD coin in base units


def _escrow_state(chain, escrow: str) -> lend.Loan | None:
    info = chain.get_account_info(Pubkey.from_string(escrow)).value
    return lend.decode_loan(bytes(info.data)) if info is not None else None


def _reconciled() -> dict:
    out = StringIO()
    call_command("reconcile", "--cluster", "CHAIN_LOCALNET", stdout=out)
    return json.loads(out.getvalue().splitlines()[0])


@pytest.mark.django_db(transaction=True)
def test_borrow_against_feed_valued_collateral_repay_release_and_close(api, celery_worker_process, chain):
    w = world(api, chain)
    s = strategy(api, w)
    shown = call(api, "post", "/strategies/single", {"loanStrategy": s}, wait=False).json()
    assert shown["status"] == "ACTIVE" and shown["expectedLoanValues"] == {"expectedApy": 1_000, "expectedLqt": [5_000, 8_000]}
    liquidity = shown["borrowInstruments"][0]["liquidity"]["onchain"]["id"]
    assert token_balance(chain, liquidity) == 50_000 * USD and shown["borrowInstruments"][0]["balance"]["lamports"] == 50_000 * USD

    borrower = Pubkey.from_string(address_of(api, w.borrower))
    lamports_before = chain.get_balance(borrower).value
    # 100 ACME at $10 is $1,000 of collateral: $400 is within 50 % loan-to-value.
    body = landed(create_loan(api, w, s["onchainId"], pledge=100 * ACME, borrow=400 * USD), 201)
    loan = body["newLoan"]
    state = _escrow_state(chain, loan["onchainId"])
    assert state.status == "ACTIVE" and state.borrower == borrower and str(state.strategy) == s["onchainId"]
    assert [(str(i.mint), i.amount) for i in state.pledged] == [(w.acme["onchainId"], 100 * ACME)]
    assert [(str(i.mint), i.principal) for i in state.borrowed] == [(w.usd["onchainId"], 400 * USD)]
    assert token_balance(chain, w.borrower_acme["onchainId"]) == 900 * ACME
    borrowed_to = lend.associated_token_address(borrower, Pubkey.from_string(w.usd["onchainId"]), Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"))
    assert token_balance(chain, str(borrowed_to)) == 400 * USD and token_balance(chain, liquidity) == 49_600 * USD
    escrow_rent = chain.get_balance(Pubkey.from_string(loan["onchainId"])).value
    escrow_token = str(state.pledged[0].token_account)
    assert escrow_rent > 0 and token_balance(chain, escrow_token) == 100 * ACME

    d = details(api, loan)
    assert d["status"] == "ACTIVE" and d["escrow"]["onchain"]["id"] == loan["onchainId"] and d["escrow"]["offchain"]["type"] == "LOAN_ESCROW"
    assert d["borrower"]["onchain"]["id"] == str(borrower) and d["lender"]["offchain"]["id"] == w.lender["offchainId"]
    assert d["pledgedItems"] == [{"pledgedAmount": 100, "accountDetails": d["pledgedItems"][0]["accountDetails"], "financialInstrument": {"onchainId": w.acme["onchainId"], "offchainId": w.acme["offchainId"]}}]
    assert d["pledgedItems"][0]["accountDetails"]["onchain"]["id"] == escrow_token and d["pledgedItems"][0]["accountDetails"]["offchain"]["tokenBalance"] == 100 * ACME
    item = d["borrowedItems"][0]
    assert (item["apy"], item["loanToValueRatio"], item["liquidationRatio"], item["duration"]) == (1_000, 5_000, 8_000, {"code": "DAYS", "unit": 30})
    assert item["principalDue"] == 400 and item["principalRepaid"] == 0 and item["accountDetails"]["onchain"]["id"] == str(borrowed_to)
    assert item["lastInterestUpdateTime"] == d["startTime"] and d["dueTime"] > d["startTime"]
    prices = {m["financialInstrument"]["onchain"]["id"]: m for m in d["marketData"]}
    assert prices[w.acme["onchainId"]]["price"] == 10 and prices[w.usd["onchainId"]]["price"] == 1 and all(m["fresh"] for m in d["marketData"])
    assert prices[w.acme["onchainId"]]["financialInstrument"]["offchain"]["id"] and prices[w.acme["onchainId"]]["dataSource"] == w.acme_feed.lookup
    assert d["valuation"]["collateralValue"] == 1_000 and d["valuation"]["liquidatable"] is False
    # Records: the escrow and its token account, ACTIVE; the borrower's USD position was created on the way.
    record = Loan.unscoped.get(offchain_id=loan["offchainId"])
    assert record.escrow_account.type == AccountType.LOAN_ESCROW and record.escrow_account.status == AccountStatus.ACTIVE
    assert Position.unscoped.get(address=escrow_token).status == PositionStatus.ACTIVE
    assert Position.unscoped.get(address=str(borrowed_to)).owner.address == str(borrower)

    # Partial repayment: interest first, then principal.
    repaid = landed(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan,
                                                 "itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"lamports": 100 * USD}}]}))
    assert repaid["repaidLoan"] == loan
    state = _escrow_state(chain, loan["onchainId"])
    paid_interest = state.borrowed[0].interest_repaid
    assert state.borrowed[0].principal_repaid == 100 * USD - paid_interest and state.status == "ACTIVE"
    assert token_balance(chain, str(borrowed_to)) == 300 * USD and token_balance(chain, liquidity) == 49_700 * USD
    assert details(api, loan)["borrowedItems"][0]["principalDue"] * USD == 300 * USD + paid_interest

    # Full repayment (repayAll: exactly what is owed when it executes, interest included), the
    # collateral released in the same transaction.
    settled(mint(api, w.holding(w.borrower, w.usd), {"amount": 5}))
    landed(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": {"offchainId": loan["offchainId"]},
                                        "itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.usd), "repayAll": True}],
                                        "itemsToRelease": [{"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"lamports": 100 * ACME}}]}))
    state = _escrow_state(chain, loan["onchainId"])
    assert state.status == "REPAID" and not state.owes_anything() and state.pledged == ()
    owed = state.borrowed[0].principal + state.borrowed[0].interest_repaid
    assert token_balance(chain, str(borrowed_to)) == 305 * USD - (owed - 100 * USD)
    assert token_balance(chain, w.borrower_acme["onchainId"]) == 1_000 * ACME
    assert chain.get_account_info(Pubkey.from_string(escrow_token)).value is None  # emptied: closed by the program
    d = details(api, loan)
    assert d["status"] == "REPAID" and d["pledgedItems"] == [] and d["borrowedItems"][0]["principalDue"] == 0
    assert Position.unscoped.get(address=escrow_token).status == PositionStatus.INACTIVE

    # Close: the escrow's rent back to the borrower.
    before = chain.get_balance(borrower).value
    result = landed(call(api, "patch", "/close", {"defiProtocol": "PARTNER_LENDING", "escrow": loan}), result=None)
    assert result["success"] is True and result["onchainId"]
    assert chain.get_account_info(Pubkey.from_string(loan["onchainId"])).value is None
    fee = chain.get_transaction(Signature.from_string(result["onchainId"]), max_supported_transaction_version=0).value.transaction.meta.fee
    assert chain.get_balance(borrower).value == before + escrow_rent - fee
    d = details(api, loan)
    assert d["status"] == "CLOSED" and d["closedAt"]
    assert Account.unscoped.get(address=loan["onchainId"]).status == AccountStatus.INACTIVE
    assert Loan.unscoped.get(offchain_id=loan["offchainId"]).status == LoanStatus.CLOSED
    assert lamports_before > chain.get_balance(borrower).value  # fees and the created position's rent
    report = _reconciled()
    assert report["drift"] == [], report
