"""Offchain balances follow the chain exactly once per confirmed transaction, and
`manage.py reconcile` finds no drift after a mixed scenario of mints, transfers, burns,
freezes and trades — and finds (and repairs) drift made outside the service."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.utils import timezone
from solders.pubkey import Pubkey
from spl.token.instructions import MintToCheckedParams, mint_to_checked

from conftest import assert_error
from positions.models import Position, PositionBalanceSnapshot
from transactions.tests.chainkit import funded, send

from .kit import instrument, position, wallet
from .movekit import at, balance, burn, mint, settled, trade, transfer

pytestmark = pytest.mark.chain



def reconcile(*args) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("reconcile", "--cluster", "CHAIN_LOCALNET", *args, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, json.loads(out.getvalue().strip().splitlines()[-1])


def fetch_balance(api, pos: dict, **item):
    response = api.call("post", "/api/v1/positions/single/balance", {"itemData": {"position": {"offchainId": pos["offchainId"]}, **item}})
    assert response.status_code == 200, response.json()
    return response.json()


def freeze(api, pos: dict, verb: str):
    response = api.call("patch", f"/api/v1/positions/{verb}?wait=confirmed", {"itemData": {"position": at(pos)}})
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), response.json()


@pytest.mark.django_db(transaction=True)
def test_mixed_scenario_leaves_no_drift_and_a_history_per_transaction(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority, decimals=2)
    cash = instrument(api, authority=authority, decimals=6, kind="STABLECOIN")
    a_bond, b_bond = position(api, alice, bond), position(api, bob, bond)
    b_cash = position(api, bob, cash)
    settled(mint(api, at(a_bond), {"amount": "100"}))
    settled(mint(api, at(b_cash), {"amount": "2500.5"}))
    before_transfers = timezone.now()
    settled(transfer(api, at(a_bond), at(b_bond), {"amount": "0.75"}))
    settled(burn(api, at(b_bond), {"lamports": 25}))
    freeze(api, b_bond, "freeze")
    assert_error(transfer(api, at(b_bond), at(a_bond), {"lamports": 1}), 400, "POSITION_FROZEN")
    freeze(api, b_bond, "unfreeze")
    settled(trade(api, [
        {"source": at(a_bond), "destination": at(b_bond), "value": {"lamports": 1_000}},
        {"source": at(b_cash), "destination": {"owner": alice, "financialInstrument": cash}, "value": {"amount": "1000"}},
    ]), 201)
    # Offchain balances equal the chain's, through the API and for solana-py alike.
    for pos, expected in ((a_bond, 10_000 - 75 - 1_000), (b_bond, 75 - 25 + 1_000), (b_cash, 1_500_500_000)):
        body = fetch_balance(api, pos)
        assert body["offchain"]["lamports"] == body["onchain"]["lamports"] == balance(chain, pos["onchainId"]) == expected, body
        assert body["inAgreement"] is True
    assert fetch_balance(api, b_cash)["offchain"]["amount"] == 1500.5
    # A past balance comes from the history; one entry per transaction that moved it.
    assert fetch_balance(api, a_bond, at=before_transfers.isoformat())["offchain"]["lamports"] == 10_000
    a_row = Position.unscoped.get(offchain_id=a_bond["offchainId"])
    assert list(PositionBalanceSnapshot.objects.filter(position=a_row).order_by("at", "pk").values_list("amount", flat=True)) == [0, 10_000, 9_925, 8_925]
    code, report = reconcile()
    assert code == 0 and report["drift"] == [] and report["positionsChecked"] == 4, report


@pytest.mark.django_db(transaction=True)
def test_reconcile_reports_drift_made_outside_the_service_and_repairs_it(api, celery_worker_process, chain):
    key = funded(chain)
    authority, owner = wallet(api, key), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    settled(mint(api, at(pos), {"lamports": 10}))
    # The mint authority's key mints outside the service: the chain moves, the service does not know.
    send(chain, key, [mint_to_checked(MintToCheckedParams(
        program_id=Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"), mint=Pubkey.from_string(bond["onchainId"]),
        dest=Pubkey.from_string(pos["onchainId"]), mint_authority=key.pubkey(), amount=5, decimals=2, signers=[]))])
    assert fetch_balance(api, pos)["inAgreement"] is False
    code, report = reconcile()
    assert code == 1
    drift = {(d["kind"], d["address"], d["offchain"], d["onchain"]) for d in report["drift"]}
    assert ("TOKEN_AMOUNT", pos["onchainId"], "10", "15") in drift
    # The authority's key also paid that transaction's fee outside the service.
    assert {d["kind"] for d in report["drift"]} == {"TOKEN_AMOUNT", "LAMPORTS"} and len(drift) == 2
    code, report = reconcile("--repair")
    assert code == 0 and report["repaired"] == 2
    assert reconcile() == (0, {**reconcile()[1], "drift": []})
    assert fetch_balance(api, pos)["offchain"]["lamports"] == 15


@pytest.mark.django_db(transaction=True)
def test_reconcile_reports_a_position_whose_address_holds_no_token_account(api, celery_worker_process, chain):
    """The base layout is solders' (positions/onchain.py): anything else at a position's
    address is drift of its own kind, reported and never "repaired" into a balance."""
    from accounts.models import Account

    key = funded(chain)
    owner = wallet(api)
    bond = instrument(api, authority=wallet(api, key))
    pos = position(api, owner, bond)
    # The record now names an address where a plain system account lives.
    stranger = funded(chain).pubkey()
    Account.unscoped.filter(address=pos["onchainId"]).update(address=str(stranger))
    code, report = reconcile()
    assert code == 1
    assert ("NOT_A_TOKEN_ACCOUNT", str(stranger), "0", None) in {(d["kind"], d["address"], d["offchain"], d["onchain"]) for d in report["drift"]}
    code, report = reconcile("--repair")
    assert code == 1 and "NOT_A_TOKEN_ACCOUNT" in {d["kind"] for d in report["drift"]}
