"""What Create Loan does before pledging, on the local node: ``mintAsset`` and
``transferFrom`` in the same transaction, and a frozen-by-default instrument whose escrow
token account is created and unfrozen in the loan's transaction (then transferFrom and
mintAsset do not apply); balances checked with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey
from spl.token.constants import TOKEN_2022_PROGRAM_ID

from conftest import assert_error
from loans.models import Loan
from positions.models import Position
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled
from programs.lending import client as lend

from .kit import call, details, expected, landed, new_feed, strategy, token_balance, world

pytestmark = pytest.mark.chain

ACME = 10**6
USD = 100


def _pledged(chain, escrow: str) -> list[tuple[str, int]]:
    state = lend.decode_loan(bytes(chain.get_account_info(Pubkey.from_string(escrow)).value.data))
    return [(str(i.mint), i.amount) for i in state.pledged]


@pytest.mark.django_db(transaction=True)
def test_mint_asset_and_transfer_from_in_the_loan_transaction(api, celery_worker_process, chain):
    w = world(api, chain, acme_units=0)
    s = strategy(api, w)
    other = wallet(api)
    other_acme = position(api, other, w.acme)
    settled(mint(api, at(other_acme), {"amount": 30}))
    item = {"defiProtocol": "PARTNER_LENDING", "partnerLendingDetails": {"loanStrategyAddress": s["onchainId"], "expectedLoanValues": expected()},
            "itemsToPledge": [
                {"positionLookup": w.holding(w.borrower, w.acme), "value": {"amount": 50}, "mintAsset": True},
                {"positionLookup": w.holding(w.borrower, w.acme), "value": {"amount": 30}, "transferFrom": {"position": {"offchainId": other_acme["offchainId"]}}},
            ],
            "itemsToBorrow": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"amount": 100}}]}
    loan = landed(call(api, "post", "", item, **w.borrower_pays), 201)["newLoan"]
    assert _pledged(chain, loan["onchainId"]) == [(w.acme["onchainId"], 80 * ACME)]  # one item per mint
    assert token_balance(chain, w.borrower_acme["onchainId"]) == 0 and token_balance(chain, other_acme["onchainId"]) == 0
    assert details(api, loan)["pledgedItems"][0]["pledgedAmount"] == 80


@pytest.mark.django_db(transaction=True)
def test_a_frozen_by_default_pledge_gets_its_escrow_account_unfrozen(api, celery_worker_process, chain):
    w = world(api, chain)
    cold = instrument(api, authority=w.issuer, version="TOKEN_2022", kind="CORPORATE_BOND", decimals=6, defaultPositionState="FROZEN")
    cold_feed = new_feed(chain, w.payer, cold["onchainId"], 20_00)
    s = strategy(api, w)
    landed(call(api, "patch", "/strategies", {"loanStrategy": s, "addPledgeInstruments": [{"financialInstrument": cold, "dataSource": cold_feed.lookup, "maxAgeSeconds": 3_600}]}))
    held = position(api, w.borrower, cold)
    thawed = api.call("patch", "/api/v1/positions/unfreeze?wait=confirmed", {"itemData": {"position": {"position": {"offchainId": held["offchainId"]}}}})
    assert thawed.status_code == 200, thawed.json()
    settled(mint(api, at(held), {"amount": 10}))
    base = {"defiProtocol": "PARTNER_LENDING", "partnerLendingDetails": {"loanStrategyAddress": s["onchainId"], "expectedLoanValues": expected()},
            "itemsToBorrow": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"amount": 50}}]}
    pledge = {"positionLookup": {"position": {"offchainId": held["offchainId"]}}, "value": {"amount": 10}}
    assert_error(call(api, "post", "", {**base, "itemsToPledge": [{**pledge, "mintAsset": True}]}, wait=False, **w.borrower_pays), 400, "NOT_APPLICABLE",
                 "itemData.itemsToPledge[0].mintAsset")

    loan = landed(call(api, "post", "", {**base, "itemsToPledge": [pledge]}, **w.borrower_pays), 201)["newLoan"]
    assert _pledged(chain, loan["onchainId"]) == [(cold["onchainId"], 10 * ACME)]
    escrow_token = lend.associated_token_address(Pubkey.from_string(loan["onchainId"]), Pubkey.from_string(cold["onchainId"]), TOKEN_2022_PROGRAM_ID)
    parsed = chain.get_account_info_json_parsed(escrow_token).value.data.parsed["info"]
    assert parsed["state"] == "initialized" and parsed["tokenAmount"]["amount"] == str(10 * ACME)
    assert Position.unscoped.get(address=str(escrow_token)).frozen is False
    assert Loan.unscoped.get(offchain_id=loan["offchainId"]).status == "ACTIVE"
    assert details(api, loan)["valuation"]["collateralValue"] == 200
