"""The keeper on the local node: after a price drop a loan beyond its liquidation ratio is
flagged (strategy liquidationMode FLAG) or liquidated (LIQUIDATE) — its collateral moves to
the lender's strategy, checked with an unmodified solana-py client — and the borrower closes
it; a loan within its ratio is neither; a record behind the chain is caught up."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import get_associated_token_address

from loans.models import Loan, LoanStatus
from loans.tasks import loans_keeper
from programs.lending import client as lend
from positions.tests.movekit import mint, settled
from tests.workers import wait_for
from transactions.tests.chainkit import send

from .kit import call, create_loan, details, landed, strategy, token_balance, world

pytestmark = pytest.mark.chain

ACME = 10**6
USD = 100


def _report(reports: list[dict]) -> dict:
    return next(r for r in reports if r["cluster"] == "CHAIN_LOCALNET")


@pytest.mark.django_db(transaction=True)
def test_a_price_drop_is_flagged_or_liquidated_as_the_strategy_says(api, celery_worker_process, chain):
    w = world(api, chain)
    flagging = strategy(api, w, mode="FLAG")
    liquidating = strategy(api, w, mode="LIQUIDATE")
    flagged = landed(create_loan(api, w, flagging["onchainId"], pledge=100 * ACME, borrow=450 * USD), 201)["newLoan"]
    liquidated = landed(create_loan(api, w, liquidating["onchainId"], pledge=100 * ACME, borrow=450 * USD), 201)["newLoan"]
    report = _report(loans_keeper())
    assert report["checked"] >= 2 and not {flagged["offchainId"], liquidated["offchainId"]} & set(report["flagged"])  # $450 against $1,000

    # ACME falls to $5: $450 against $500 is beyond 80 %.
    w.acme_feed.set(chain, w.payer, 5_00)
    assert details(api, flagged)["valuation"]["liquidatable"] is True
    report = _report(loans_keeper())
    assert {flagged["offchainId"], liquidated["offchainId"]} <= set(report["flagged"]) and report["liquidated"] == [liquidated["offchainId"]]
    shown = details(api, flagged)
    assert shown["status"] == "ACTIVE" and shown["flaggedAt"] and shown["flagReason"] == "beyond the liquidation ratio"

    wait_for(lambda: Loan.unscoped.get(offchain_id=liquidated["offchainId"]).status == LoanStatus.LIQUIDATED, timeout=30, what="the liquidation")
    state = lend.decode_loan(bytes(chain.get_account_info(Pubkey.from_string(liquidated["onchainId"])).value.data))
    assert state.status == "LIQUIDATED" and state.pledged == ()
    pool = call(api, "post", "/strategies/single", {"loanStrategy": liquidating}, wait=False).json()["pledgeInstruments"][0]["liquidity"]["onchain"]["id"]
    assert token_balance(chain, pool) == 100 * ACME  # the collateral went to the lender's strategy
    shown = details(api, liquidated)
    assert shown["status"] == "LIQUIDATED" and shown["pledgedItems"] == [] and shown["flaggedAt"] is None
    # The keeper does not liquidate twice; the borrower closes the liquidated loan.
    assert liquidated["offchainId"] not in _report(loans_keeper())["liquidated"]
    landed(call(api, "patch", "/close", {"defiProtocol": "PARTNER_LENDING", "escrow": liquidated}), result=None)
    assert chain.get_account_info(Pubkey.from_string(liquidated["onchainId"])).value is None
    assert details(api, liquidated)["status"] == "CLOSED"

    # The price recovers: the flag is cleared.
    w.acme_feed.set(chain, w.payer, 10_00)
    _report(loans_keeper())
    assert details(api, flagged)["flaggedAt"] is None


@pytest.mark.django_db(transaction=True)
def test_a_loan_repaid_outside_the_service_is_caught_up(api, celery_worker_process, chain):
    """The borrower repays with a transaction of its own wallet, not through the service: the
    keeper copies the chain into the records."""
    key = Keypair()
    w = world(api, chain, borrower_key=key)
    s = strategy(api, w)
    loan = landed(create_loan(api, w, s["onchainId"], pledge=100 * ACME, borrow=10 * USD), 201)["newLoan"]
    state = lend.decode_loan(bytes(chain.get_account_info(Pubkey.from_string(loan["onchainId"])).value.data))
    usd = lend.TokenMint(Pubkey.from_string(w.usd["onchainId"]), TOKEN_PROGRAM_ID)
    source = get_associated_token_address(key.pubkey(), usd.mint, usd.token_program)
    settled(mint(api, {"owner": w.borrower, "financialInstrument": w.usd}, {"lamports": 5 * USD}))  # the interest
    send(chain, key, [lend.repay(lend.LOCALNET_PROGRAM_ID, escrow=Pubkey.from_string(loan["onchainId"]), strategy=state.strategy, repayer=key.pubkey(), mint=usd,
                                 source=source, amount=15 * USD, repay_all=True)])
    assert details(api, loan)["status"] == "ACTIVE"  # the record is behind the chain
    assert _report(loans_keeper())["synced"] >= 1
    shown = details(api, loan)
    assert shown["status"] == "REPAID" and shown["borrowedItems"][0]["principalDue"] == 0
