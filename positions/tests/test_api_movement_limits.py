"""Debit limits on token transfers and trades (docs/positions.md, "Debit limits and
approvals"): over a limit the transaction is built and signed but held PENDING_APPROVAL,
nothing moves on chain until another key with PLATFORM_APPROVE_TRANSACTIONS approves it."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair

from conftest import assert_error
from positions.models import Position
from transactions.models import Transaction

from .kit import instrument, position, wallet
from .movekit import at, balance, mint, settled, trade, transfer

pytestmark = pytest.mark.chain




def held(response) -> dict:
    assert response.status_code in (200, 201), response.json()
    body = response.json()
    assert body["svmTransaction"]["status"] == "PENDING_APPROVAL", body
    assert body["svmTransaction"]["onchainId"] is None  # no signature handed out while held
    return body


def decide(client, verb: str, body: dict, **item):
    return client.call("patch", f"/api/v1/transactions/{verb}?wait=confirmed", {"itemData": {"transaction": {"offchainId": body["svmTransaction"]["offchainId"]}, **item}})


def funded_position(api, owner: dict, bond: dict, lamports: int = 10_000) -> dict:
    pos = position(api, owner, bond)
    settled(mint(api, at(pos), {"lamports": lamports}))
    return pos


@pytest.mark.django_db(transaction=True)
def test_transfer_to_an_off_platform_owner_is_held_until_approved(api, approver, celery_worker_process, chain):
    authority, alice = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a = funded_position(api, alice, bond)
    outsider = {"owner": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}, "financialInstrument": bond}
    body = held(transfer(api, at(a), outsider, {"lamports": 7}, wait=False))
    tx = Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"])
    assert "OFF_PLATFORM" in tx.error_message and tx.effects["debits"][0]["destinationType"] == "OFF_PLATFORM"
    assert balance(chain, a["onchainId"]) == 10_000  # nothing moved
    assert_error(decide(api, "approve", body), 403)  # the requesting key may not approve
    approved = decide(approver, "approve", body)
    assert approved.status_code == 200, approved.json()
    assert approved.json()["status"] in ("CONFIRMED", "FINALIZED"), approved.json()
    assert balance(chain, a["onchainId"]) == 9_993


@pytest.mark.django_db(transaction=True)
def test_token_defaults_hold_over_one_token_to_a_non_managed_owner_and_pass_managed(api, approver, celery_worker_process, chain):
    authority, alice, managed_bob = wallet(api), wallet(api), wallet(api)
    watched = wallet(api, managed=False, address=str(Keypair().pubkey()))
    bond = instrument(api, authority=authority, decimals=2)  # one token = 100 base units
    a = funded_position(api, alice, bond)
    to_watched = {"owner": watched, "financialInstrument": bond}
    settled(transfer(api, at(a), to_watched, {"amount": "1"}), 201)  # exactly the limit: passes
    body = held(transfer(api, at(a), to_watched, {"amount": "1.01"}, wait=False))
    assert "PER_TRANSACTION" in Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"]).error_message
    settled(transfer(api, at(a), {"owner": managed_bob, "financialInstrument": bond}, {"amount": "50"}), 201)  # MANAGED: unlimited
    rejected = decide(approver, "reject", body, reason="not today")
    assert rejected.status_code == 200 and rejected.json()["status"] == "CANCELLED"
    assert balance(chain, a["onchainId"]) == 10_000 - 100 - 5_000


@pytest.mark.django_db(transaction=True)
def test_empty_limits_and_non_wallet_owners_are_not_held(api, celery_worker_process, chain):
    authority = wallet(api)
    treasury = wallet(api, offchainReferences={"type": "TOKEN_MANAGEMENT_AUTHORITY"})
    alice = wallet(api)
    bond = instrument(api, authority=authority)
    t = funded_position(api, treasury, bond)
    outsider = {"owner": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}, "financialInstrument": bond}
    settled(transfer(api, at(t), outsider, {"lamports": 5}))  # not a wallet: no limits
    a = funded_position(api, alice, bond)
    Position.unscoped.filter(offchain_id=a["offchainId"]).update(token_debit_limits=[])  # [] = no limits
    settled(transfer(api, at(a), outsider, {"lamports": 5}))


@pytest.mark.django_db(transaction=True)
def test_token_debit_api_keys_refuse_other_keys_before_anything_is_built(api, tenant, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a = funded_position(api, alice, bond)
    Position.unscoped.filter(offchain_id=a["offchainId"]).update(token_debit_api_keys=["ak_somebody_else"])
    before = Transaction.unscoped.count()
    assert_error(transfer(api, at(a), {"owner": bob, "financialInstrument": bond}, {"lamports": 1}), 403, "DEBIT_NOT_ALLOWED")
    assert Transaction.unscoped.count() == before


@pytest.mark.django_db(transaction=True)
def test_a_trade_with_one_leg_over_its_limit_is_held_whole(api, approver, celery_worker_process, chain):
    authority, alice = wallet(api), wallet(api)
    watched = wallet(api, managed=False, address=str(Keypair().pubkey()))
    bond, cash = instrument(api, authority=authority), instrument(api, authority=authority, kind="STABLECOIN")
    a_bond = funded_position(api, alice, bond)
    w_cash = position(api, watched, cash)
    settled(mint(api, at(w_cash), {"lamports": 1_000}))
    a_cash = position(api, alice, cash)
    Position.unscoped.filter(offchain_id=w_cash["offchainId"]).update(token_debit_limits=[])
    legs = [
        {"source": at(a_bond), "destination": {"owner": watched, "financialInstrument": bond}, "value": {"lamports": 500}},  # 5 tokens to NON_MANAGED: over 1
        {"source": at(w_cash), "destination": at(a_cash), "value": {"lamports": 300}},
    ]
    response = trade(api, legs, wait=False)
    assert response.status_code == 201, response.json()  # the watched owner's bond position is created on the way
    body = response.json()
    # The watched party signs off platform first; the trade is held for approval once it has.
    assert body["svmTransaction"]["status"] == "PARTIALLY_SIGNED" and body["trade"]["onchainId"] is None
    tx = Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"])
    assert len(tx.effects["debits"]) == 2 and tx.approval_required
    assert balance(chain, a_bond["onchainId"]) == 10_000 and balance(chain, w_cash["onchainId"]) == 1_000
