"""Swap Collateral and Refinance Loan through the API on the local node: a swap that would
break the loan-to-value ratio is refused by the program (400 PROGRAM_ERROR, nothing recorded
or moved) and one within it lands; the loan moves to a second lender's strategy, which pays
off the first; balances checked with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

from conftest import assert_error
from loans.models import Loan
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled
from programs.lending import client as lend
from transactions.models import Transaction
from transactions.tests.chainkit import wait

from .kit import address_of, call, create_loan, details, landed, new_feed, strategy, token_balance, world

pytestmark = pytest.mark.chain

ACME = 10**6
USD = 100


def _state(chain, escrow: str) -> lend.Loan:
    return lend.decode_loan(bytes(chain.get_account_info(Pubkey.from_string(escrow)).value.data))


@pytest.mark.django_db(transaction=True)
def test_swap_refused_beyond_the_ratio_and_accepted_within_it(api, celery_worker_process, chain):
    w = world(api, chain)
    s = strategy(api, w)
    # A second collateral: GOLD at $50, accepted by the strategy.
    gold = instrument(api, authority=w.issuer, kind="CORPORATE_BOND", decimals=6)
    gold_feed = new_feed(chain, w.payer, gold["onchainId"], 50_00)
    landed(call(api, "patch", "/strategies", {"loanStrategy": s, "addPledgeInstruments": [{"financialInstrument": gold, "dataSource": gold_feed.lookup, "maxAgeSeconds": 3_600}]}))
    gold_position = position(api, w.borrower, gold)
    settled(mint(api, at(gold_position), {"lamports": 10 * ACME}))
    loan = landed(create_loan(api, w, s["onchainId"], pledge=100 * ACME, borrow=450 * USD), 201)["newLoan"]
    escrow_acme = str(_state(chain, loan["onchainId"]).pledged[0].token_account)

    # Withdrawing 20 ACME leaves $800 against $450: beyond 50 %. Refused, nothing moves.
    before = Transaction.unscoped.count(), token_balance(chain, escrow_acme), token_balance(chain, w.borrower_acme["onchainId"])
    withdraw = {"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"amount": 20}}
    error = assert_error(call(api, "patch", "/swap-collateral", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToWithdraw": [withdraw]}), 400, "PROGRAM_ERROR", "itemData.itemsToWithdraw[0]")
    assert "LtvExceeded" in error["errors"][0]["message"]
    assert (Transaction.unscoped.count(), token_balance(chain, escrow_acme), token_balance(chain, w.borrower_acme["onchainId"])) == before
    assert details(api, loan)["pledgedItems"][0]["pledgedAmount"] == 100

    # Depositing 5 GOLD ($250) in the same transaction keeps it within: accepted.
    deposit = {"positionLookup": {"position": {"offchainId": gold_position["offchainId"]}}, "value": {"amount": 5}}
    swapped = landed(call(api, "patch", "/swap-collateral", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToDeposit": [deposit], "itemsToWithdraw": [withdraw]}))
    assert swapped["updatedLoan"] == loan
    state = _state(chain, loan["onchainId"])
    assert [(str(i.mint), i.amount) for i in state.pledged] == [(w.acme["onchainId"], 80 * ACME), (gold["onchainId"], 5 * ACME)]
    assert token_balance(chain, w.borrower_acme["onchainId"]) == 920 * ACME and token_balance(chain, gold_position["onchainId"]) == 5 * ACME
    shown = details(api, loan)
    assert [i["pledgedAmount"] for i in shown["pledgedItems"]] == [80, 5] and shown["valuation"]["collateralValue"] == 1_050
    assert {m["financialInstrument"]["onchain"]["id"] for m in shown["marketData"]} == {w.acme["onchainId"], gold["onchainId"], w.usd["onchainId"]}

    # Withdrawing all of an item closes its escrow token account; the loan still holds.
    landed(call(api, "patch", "/swap-collateral", {"defiProtocol": "PARTNER_LENDING", "escrow": loan,
                                                  "itemsToDeposit": [{"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"amount": 20}}],
                                                  "itemsToWithdraw": [{"positionLookup": {"position": {"offchainId": gold_position["offchainId"]}}, "value": {"amount": 5}}]}))
    assert [(str(i.mint), i.amount) for i in _state(chain, loan["onchainId"]).pledged] == [(w.acme["onchainId"], 100 * ACME)]
    assert [i["pledgedAmount"] for i in details(api, loan)["pledgedItems"]] == [100]


@pytest.mark.django_db(transaction=True)
def test_refinance_to_a_second_lender(api, celery_worker_process, chain):
    w = world(api, chain)
    first = strategy(api, w)
    second_lender = wallet(api)
    wait(chain, chain.request_airdrop(Pubkey.from_string(address_of(api, second_lender)), 5 * 10**9).value)
    second_usd = position(api, second_lender, w.usd)
    settled(mint(api, at(second_usd), {"lamports": 10_000 * USD}))
    cheaper = {"apy": 500, "loanToValueRatio": 6_000, "liquidationRatio": 8_500, "duration": {"code": "DAYS", "unit": 60}}
    second = strategy(api, w, lender=second_lender, terms=cheaper, liquidity=5_000 * USD)
    loan = landed(create_loan(api, w, first["onchainId"], pledge=100 * ACME, borrow=400 * USD), 201)["newLoan"]
    first_pool = details(api, loan)["borrowedItems"][0]
    first_liquidity = call(api, "post", "/strategies/single", {"loanStrategy": first}, wait=False).json()["borrowInstruments"][0]["liquidity"]["onchain"]["id"]
    second_liquidity = call(api, "post", "/strategies/single", {"loanStrategy": second}, wait=False).json()["borrowInstruments"][0]["liquidity"]["onchain"]["id"]
    assert first_pool["apy"] == 1_000 and token_balance(chain, first_liquidity) == 49_600 * USD

    item = {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "fromLender": w.lender, "toLender": second_lender,
            "partnerLendingDetails": {"loanStrategyAddress": second["onchainId"], "expectedLoanValues": {"expectedApy": 500, "expectedLqt": [6_000, 8_500]}}}
    # toLender must be the new strategy's lender, fromLender the loan's.
    assert_error(call(api, "patch", "/refinance", {**item, "toLender": w.lender}), 400, "LENDER_MISMATCH", "itemData.toLender")
    assert_error(call(api, "patch", "/refinance", {**item, "fromLender": second_lender}), 400, "LENDER_MISMATCH", "itemData.fromLender")
    assert_error(call(api, "patch", "/refinance", {k: v for k, v in item.items() if k != "toLender"}), 400, "LENDER_REQUIRED", "itemData.toLender")
    # The new strategy's terms must be the expected ones (the program's check).
    wrong = {**item, "partnerLendingDetails": {**item["partnerLendingDetails"], "expectedLoanValues": {"expectedApy": 1_000, "expectedLqt": [6_000, 8_500]}}}
    error = assert_error(call(api, "patch", "/refinance", wrong), 400, "PROGRAM_ERROR", "itemData.partnerLendingDetails.expectedLoanValues.expectedApy")
    assert "ApyMismatch" in error["errors"][0]["message"]

    refinanced = landed(call(api, "patch", "/refinance", item))
    assert refinanced["refinancedLoan"] == loan
    state = _state(chain, loan["onchainId"])
    assert str(state.strategy) == second["onchainId"] and state.terms.apy_bps == 500 and state.terms.duration_unit == 60
    paid = state.borrowed[0].principal
    assert paid >= 400 * USD and state.borrowed[0].principal_repaid == 0
    assert token_balance(chain, first_liquidity) == 49_600 * USD + paid  # the first lender is paid off
    assert token_balance(chain, second_liquidity) == 5_000 * USD - paid
    shown = details(api, loan)
    assert shown["lender"]["onchain"]["id"] == address_of(api, second_lender) and shown["loanStrategy"] == second
    assert shown["borrowedItems"][0]["apy"] == 500 and shown["borrowedItems"][0]["duration"] == {"code": "DAYS", "unit": 60}
    assert Loan.unscoped.get(offchain_id=loan["offchainId"]).strategy.address == second["onchainId"]
