"""Mint, Burn, Transfer Financial Instrument and Trade on the local node, through the API
with a real worker; token balances are read back with an unmodified solana-py client."""

from __future__ import annotations

import uuid

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams
from solders.system_program import transfer as transfer_lamports
from spl.token.instructions import create_associated_token_account, get_associated_token_address

from conftest import assert_error
from instruments.models import FinancialInstrument
from positions.models import Position, PositionStatus
from transactions.models import Transaction
from transactions.collecting import transaction_add_signatures
from transactions.settlement import transaction_confirm
from transactions.tests.chainkit import funded, send

from .kit import details, instrument, position, wallet
from .movekit import at, balance, burn, mint, settled, trade, transfer

pytestmark = pytest.mark.chain

U64_MAX = 2**64 - 1



def _supply(lookup: dict) -> int:
    return int(FinancialInstrument.unscoped.get(offchain_id=lookup["offchainId"]).supply_offchain)


def _tx(body: dict) -> Transaction:
    return Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"])


def _sign_off_platform(tx: Transaction, keypair: Keypair) -> Transaction:
    """What Sign Transaction does with a signature collected outside the service."""
    signature = keypair.sign_message(bytes(tx.message))
    return transaction_add_signatures(transaction=tx, signatures={str(keypair.pubkey()): str(signature)})


def _wait_status(tx: Transaction, *statuses: str, timeout: float = 20) -> Transaction:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tx.refresh_from_db()
        if tx.status in statuses:
            return tx
        time.sleep(0.1)
    raise AssertionError(f"transaction {tx.offchain_id} is {tx.status}, not {statuses}")


# --- Mint ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_mint_moves_tokens_into_the_position_and_counts_the_supply_once(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    body = settled(mint(api, at(pos), {"amount": "12.34"}))
    assert body["mintedPosition"] == pos
    assert balance(chain, pos["onchainId"]) == 1234
    tx = _tx(body)
    assert tx.operation == "positions.mint" and tx.effects["positions"] == [pos["offchainId"]] and tx.effects["created"] == []
    assert tx.effects["movement"]["kind"] == "MINT"
    assert tx.effects["movement"]["legs"] == [{
        "instrument": bond["offchainId"], "mint": bond["onchainId"], "amount": "1234", "decimals": 2,
        "authority": tx.effects["movement"]["legs"][0]["authority"], "source": None,
        "destination": {"position": pos["offchainId"], "address": pos["onchainId"]},
    }]
    assert _supply(bond) == 1234
    # Effects apply once: confirming it again changes nothing.
    transaction_confirm(transaction_id=tx.pk)
    assert _supply(bond) == 1234
    supply = api.call("post", "/api/v1/financial-instruments/single/circulating-supply", {"itemData": bond}).json()
    assert supply["inAgreement"] is True and supply["onchain"]["lamports"] == 1234
    assert Position.unscoped.get(offchain_id=pos["offchainId"]).last_transaction_id == tx.pk


@pytest.mark.django_db(transaction=True)
def test_mint_create_if_missing_creates_the_position_in_the_same_transaction(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    lookup = {"owner": owner, "financialInstrument": bond}
    assert_error(mint(api, lookup, {"lamports": 5}), 404, "NOT_FOUND")
    assert not Position.unscoped.exists() and not Transaction.unscoped.filter(operation="positions.mint").exists()

    body = settled(mint(api, lookup, {"lamports": 500}, createIfMissing=True), 201)
    created = Position.unscoped.select_related("account").get(offchain_id=body["mintedPosition"]["offchainId"])
    owner_address = created.owner_address
    expected = get_associated_token_address(Pubkey.from_string(owner_address), Pubkey.from_string(bond["onchainId"]))
    assert created.address == str(expected) == body["mintedPosition"]["onchainId"]
    assert balance(chain, created.address) == 500
    tx = _tx(body)
    assert created.status == PositionStatus.ACTIVE and created.account.status == "ACTIVE"
    assert created.creation_transaction_id == tx.pk and tx.effects["created"] == [str(created.offchain_id)]
    assert details(api, lookup).json()["status"] == "ACTIVE"
    # Now it exists: a second mint with createIfMissing just mints (200).
    assert settled(mint(api, lookup, {"lamports": 1}, createIfMissing=True))["mintedPosition"]["offchainId"] == str(created.offchain_id)
    assert balance(chain, created.address) == 501


@pytest.mark.django_db(transaction=True)
def test_mint_authority_may_be_named_and_must_be_the_mints(api, celery_worker_process, chain):
    authority, owner, stranger = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    settled(mint(api, {**at(pos), "mintAuthority": authority}, {"lamports": 7}))
    before = Transaction.unscoped.count()
    assert_error(mint(api, {**at(pos), "mintAuthority": stranger}, {"lamports": 7}), 400, "AUTHORITY_MISMATCH", "itemData.position.mintAuthority")
    assert_error(transfer(api, {**at(pos), "mintAuthority": authority}, at(pos), {"lamports": 1}), 400, "NOT_APPLICABLE", "itemData.source.mintAuthority")
    assert Transaction.unscoped.count() == before and balance(chain, pos["onchainId"]) == 7


@pytest.mark.django_db(transaction=True)
def test_mint_by_an_unmanaged_mint_authority_waits_partially_signed(api, celery_worker_process, chain):
    outside = Keypair()
    authority = wallet(api, managed=False, address=str(outside.pubkey()))
    owner = wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    response = mint(api, at(pos), {"lamports": 300})
    assert response.status_code == 200, response.json()
    tx = _tx(response.json())
    assert response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED" and tx.missing_signers == [str(outside.pubkey())]
    assert balance(chain, pos["onchainId"]) == 0 and _supply(bond) == 0
    _sign_off_platform(tx, outside)
    _wait_status(tx, "CONFIRMED", "FINALIZED")
    assert balance(chain, pos["onchainId"]) == 300 and _supply(bond) == 300


# --- Burn ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_burn_by_the_owner_burns_and_lowers_the_supply(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    settled(mint(api, at(pos), {"amount": "10"}))
    body = settled(burn(api, at(pos), {"amount": "4"}))
    assert body["burnedPosition"] == pos
    assert balance(chain, pos["onchainId"]) == 600
    assert _tx(body).effects["movement"]["legs"][0]["source"] == {"position": pos["offchainId"], "address": pos["onchainId"]}
    assert _supply(bond) == 600
    # More than the balance: the program's reason, nothing burned, nothing recorded.
    before = Transaction.unscoped.count()
    error = assert_error(burn(api, at(pos), {"lamports": 601}), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "insufficient funds" in error["errors"][0]["message"]
    assert Transaction.unscoped.count() == before and balance(chain, pos["onchainId"]) == 600 and _supply(bond) == 600


@pytest.mark.django_db(transaction=True)
def test_burn_by_an_unmanaged_owner_waits_partially_signed(api, celery_worker_process, chain):
    outside = Keypair()
    authority, owner = wallet(api), wallet(api, managed=False, address=str(outside.pubkey()))
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    settled(mint(api, at(pos), {"lamports": 50}))
    response = burn(api, at(pos), {"lamports": 20})
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED", response.json()
    assert balance(chain, pos["onchainId"]) == 50
    _wait_status(_sign_off_platform(_tx(response.json()), outside), "CONFIRMED", "FINALIZED")
    assert balance(chain, pos["onchainId"]) == 30 and _supply(bond) == 30


# --- Transfer -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_transfer_between_positions(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a, b = position(api, alice, bond), position(api, bob, bond)
    settled(mint(api, at(a), {"amount": "5"}))
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": bond}, {"amount": "1.25"}))
    assert body["destinationPosition"] == b
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (375, 125)
    tx = _tx(body)
    assert sorted(tx.effects["positions"]) == sorted([a["offchainId"], b["offchainId"]]) and tx.effects["movement"]["kind"] == "TRANSFER"
    assert _supply(bond) == 500  # a transfer moves no supply
    assert_error(transfer(api, at(a), at(a), {"lamports": 1}), 400, "SAME_POSITION", "itemData.destination")
    error = assert_error(transfer(api, at(a), at(b), {"lamports": 376}), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "insufficient funds" in error["errors"][0]["message"]
    other = instrument(api, authority=authority)
    c = position(api, bob, other)
    assert_error(transfer(api, at(a), at(c), {"lamports": 1}), 400, "INSTRUMENT_MISMATCH")
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (375, 125)


@pytest.mark.django_db(transaction=True)
def test_transfer_creates_the_missing_destination_position(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a = position(api, alice, bond)
    settled(mint(api, at(a), {"lamports": 100}))
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": bond}, {"lamports": 40}), 201)
    created = Position.unscoped.get(offchain_id=body["destinationPosition"]["offchainId"])
    assert created.status == PositionStatus.ACTIVE and created.associated and not created.was_onchain_already
    assert created.creation_transaction_id == _tx(body).pk
    assert balance(chain, created.address) == 40 and balance(chain, a["onchainId"]) == 60


@pytest.mark.django_db(transaction=True)
def test_transfer_to_an_unrecorded_associated_account_onboards_it(api, celery_worker_process, chain):
    bob_key = funded(chain)
    authority, alice, bob = wallet(api), wallet(api), wallet(api, bob_key)
    bond = instrument(api, authority=authority)
    a = position(api, alice, bond)
    settled(mint(api, at(a), {"lamports": 100}))
    send(chain, bob_key, [create_associated_token_account(bob_key.pubkey(), bob_key.pubkey(), Pubkey.from_string(bond["onchainId"]))])
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": bond}, {"lamports": 10}), 201)
    onboarded = Position.unscoped.get(offchain_id=body["destinationPosition"]["offchainId"])
    assert onboarded.was_onchain_already and onboarded.status == PositionStatus.ACTIVE and onboarded.creation_transaction_id is None
    assert _tx(body).effects["created"] == []
    assert balance(chain, onboarded.address) == 10


@pytest.mark.django_db(transaction=True)
def test_transfer_to_an_off_platform_owner_creates_its_token_account_without_records(api, celery_worker_process, chain):
    authority, alice = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a = position(api, alice, bond)
    # No debit limits on this position (an off-platform destination is otherwise held for
    # approval by the token defaults: test_api_movement_limits.py).
    Position.unscoped.filter(offchain_id=a["offchainId"]).update(token_debit_limits=[])
    settled(mint(api, at(a), {"lamports": 100}))
    outsider = Keypair().pubkey()
    destination = {"owner": {"onchainId": str(outsider), "offPlatform": True}, "financialInstrument": bond}
    positions_before = Position.unscoped.count()
    body = settled(transfer(api, at(a), destination, {"lamports": 30}))
    ata = get_associated_token_address(outsider, Pubkey.from_string(bond["onchainId"]))
    assert body["destinationPosition"] == {"onchainId": str(ata), "offchainId": None}
    assert balance(chain, str(ata)) == 30
    assert Position.unscoped.count() == positions_before
    assert _tx(body).effects["movement"]["legs"][0]["destination"] == {"position": None, "address": str(ata)}
    # Its token account exists now: the next transfer only moves tokens.
    settled(transfer(api, at(a), destination, {"lamports": 5}))
    assert balance(chain, str(ata)) == 35 and balance(chain, a["onchainId"]) == 65
    # Lamports sent to an associated address before its token account exists do not stop it.
    prefunded = Keypair().pubkey()
    prefunded_ata = get_associated_token_address(prefunded, Pubkey.from_string(bond["onchainId"]))
    sender = funded(chain)
    send(chain, sender, [transfer_lamports(TransferParams(from_pubkey=sender.pubkey(), to_pubkey=prefunded_ata, lamports=1_000_000))])
    settled(transfer(api, at(a), {"owner": {"onchainId": str(prefunded), "offPlatform": True}, "financialInstrument": bond}, {"lamports": 2}))
    assert balance(chain, str(prefunded_ata)) == 2
    # Without offPlatform, an unknown owner is not found.
    assert_error(transfer(api, at(a), {"owner": {"onchainId": str(outsider)}, "financialInstrument": bond}, {"lamports": 1}), 404)


@pytest.mark.django_db(transaction=True)
def test_positions_that_are_not_live_can_neither_send_nor_receive(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a, b = position(api, alice, bond), position(api, bob, bond)
    settled(mint(api, at(a), {"lamports": 10}))
    before = Transaction.unscoped.count()
    for status, code in ((PositionStatus.PENDING, "POSITION_PENDING"), (PositionStatus.FAILED, "POSITION_NOT_ONCHAIN"), (PositionStatus.INACTIVE, "POSITION_INACTIVE")):
        Position.unscoped.filter(offchain_id=b["offchainId"]).update(status=status)
        assert_error(transfer(api, at(a), at(b), {"lamports": 1}), 400, code, "itemData.destination")
        assert_error(transfer(api, at(b), at(a), {"lamports": 1}), 400, code, "itemData.source")
        assert_error(mint(api, at(b), {"lamports": 1}), 400, code, "itemData.position")
        assert_error(burn(api, at(b), {"lamports": 1}), 400, code, "itemData.position")
    assert Transaction.unscoped.count() == before and balance(chain, a["onchainId"]) == 10


@pytest.mark.django_db(transaction=True)
def test_wrong_delegate_on_record_gets_the_programs_reason(api, celery_worker_process, chain):
    """The service checks the authority against its records; when those are wrong (here a
    delegate the chain never approved), the simulation refuses with the program's reason."""
    authority, alice, bob, mallory = wallet(api), wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a, b = position(api, alice, bond), position(api, bob, bond)
    settled(mint(api, at(a), {"lamports": 10}))
    assert_error(transfer(api, at(a), at(b), {"lamports": 1}, authority=mallory), 400, "AUTHORITY_MISMATCH", "itemData.authority")
    from accounts.models import Account

    Position.unscoped.filter(offchain_id=a["offchainId"]).update(delegate_address=Account.unscoped.get(offchain_id=mallory["offchainId"]).address, delegated_amount=5)
    error = assert_error(transfer(api, at(a), at(b), {"lamports": 1}, authority=mallory), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "owner does not match" in error["errors"][0]["message"]
    assert balance(chain, a["onchainId"]) == 10


# --- Trade ----------------------------------------------------------------------------------


def _trade_parties(api):
    authority, seller, buyer = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    cash = instrument(api, authority=authority)
    return authority, seller, buyer, bond, cash


@pytest.mark.django_db(transaction=True)
def test_trade_settles_every_leg_in_one_transaction(api, celery_worker_process, chain):
    _, seller, buyer, bond, cash = _trade_parties(api)
    seller_bond, buyer_cash = position(api, seller, bond), position(api, buyer, cash)
    settled(mint(api, at(seller_bond), {"lamports": 10}))
    settled(mint(api, at(buyer_cash), {"lamports": 1000}))
    legs = [
        {"source": at(seller_bond), "destination": {"owner": buyer, "financialInstrument": bond}, "value": {"lamports": 10}},
        {"source": at(buyer_cash), "destination": {"owner": seller, "financialInstrument": cash}, "value": {"lamports": 990}},
    ]
    body = settled(trade(api, legs), 201)  # both receiving positions are created on the way
    tx = _tx(body)
    assert body["trade"] == {"onchainId": tx.onchain_id, "offchainId": str(tx.offchain_id)}
    assert tx.operation == "positions.trade" and len(tx.effects["movement"]["legs"]) == 2 and len(tx.effects["created"]) == 2
    buyer_bond = details(api, {"owner": buyer, "financialInstrument": bond}).json()
    seller_cash = details(api, {"owner": seller, "financialInstrument": cash}).json()
    assert buyer_bond["status"] == seller_cash["status"] == "ACTIVE"
    assert (balance(chain, seller_bond["onchainId"]), balance(chain, buyer_bond["onchainId"])) == (0, 10)
    assert (balance(chain, buyer_cash["onchainId"]), balance(chain, seller_cash["onchainId"])) == (10, 990)
    assert _supply(bond) == 10 and _supply(cash) == 1000


@pytest.mark.django_db(transaction=True)
def test_trade_with_a_failing_leg_moves_and_records_nothing(api, celery_worker_process, chain):
    _, seller, buyer, bond, cash = _trade_parties(api)
    seller_bond, buyer_cash = position(api, seller, bond), position(api, buyer, cash)
    settled(mint(api, at(seller_bond), {"lamports": 10}))
    settled(mint(api, at(buyer_cash), {"lamports": 100}))
    legs = [
        {"source": at(seller_bond), "destination": {"owner": buyer, "financialInstrument": bond}, "value": {"lamports": 10}},
        {"source": at(buyer_cash), "destination": {"owner": seller, "financialInstrument": cash}, "value": {"lamports": 990}},  # has 100
    ]
    positions, transactions = Position.unscoped.count(), Transaction.unscoped.count()
    error = assert_error(trade(api, legs), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "insufficient funds" in error["errors"][0]["message"]
    assert (Position.unscoped.count(), Transaction.unscoped.count()) == (positions, transactions)
    assert (balance(chain, seller_bond["onchainId"]), balance(chain, buyer_cash["onchainId"])) == (10, 100)
    buyer_bond = get_associated_token_address(Pubkey.from_string(_address(buyer)), Pubkey.from_string(bond["onchainId"]))
    assert chain.get_account_info(buyer_bond).value is None  # not even the receiving account
    assert_error(trade(api, legs[:1]), 400, "TOO_SHORT")


@pytest.mark.django_db(transaction=True)
def test_trade_with_an_unmanaged_party_waits_partially_signed(api, celery_worker_process, chain):
    buyer_key = Keypair()
    authority, seller = wallet(api), wallet(api)
    buyer = wallet(api, managed=False, address=str(buyer_key.pubkey()))
    bond, cash = instrument(api, authority=authority), instrument(api, authority=authority)
    seller_bond, buyer_cash = position(api, seller, bond), position(api, buyer, cash)
    buyer_bond, seller_cash = position(api, buyer, bond), position(api, seller, cash)
    settled(mint(api, at(seller_bond), {"lamports": 3}))
    settled(mint(api, at(buyer_cash), {"lamports": 300}))
    legs = [
        {"source": at(seller_bond), "destination": at(buyer_bond), "value": {"lamports": 3}},
        {"source": at(buyer_cash), "destination": at(seller_cash), "value": {"lamports": 300}},
    ]
    response = trade(api, legs)
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED", response.json()
    tx = _tx(response.json())
    assert tx.missing_signers == [str(buyer_key.pubkey())]
    assert balance(chain, seller_bond["onchainId"]) == 3 and balance(chain, buyer_cash["onchainId"]) == 300
    _wait_status(_sign_off_platform(tx, buyer_key), "CONFIRMED", "FINALIZED")
    assert [balance(chain, p["onchainId"]) for p in (seller_bond, buyer_bond, buyer_cash, seller_cash)] == [0, 3, 0, 300]


def _address(lookup: dict) -> str:
    from accounts.models import Account

    return Account.unscoped.get(offchain_id=lookup["offchainId"]).address


# --- Values, idempotency --------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_values_are_checked_before_anything_is_built(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority, decimals=2)
    pos = position(api, owner, bond)
    before = Transaction.unscoped.count()
    for value, code in (
        ({"amount": "1.234"}, "TOO_MANY_DECIMALS"),
        ({"amount": "1.23", "lamports": 124}, "VALUE_MISMATCH"),
        ({"lamports": 0}, "INVALID_AMOUNT"),
        ({"amount": "0"}, "INVALID_AMOUNT"),
        ({"amount": str(U64_MAX)}, "AMOUNT_TOO_LARGE"),  # × 10^2 base units
        ({"lamports": U64_MAX + 1}, "OUT_OF_RANGE"),
        ({"amount": "-1"}, "OUT_OF_RANGE"),
        ({}, "REQUIRED"),
    ):
        assert_error(mint(api, at(pos), value), 400, code)
        assert_error(transfer(api, at(pos), {"owner": wallet(api), "financialInstrument": bond}, value), 400, code)
        assert_error(burn(api, at(pos), value), 400, code)
    assert Transaction.unscoped.count() == before and not Position.unscoped.exclude(offchain_id=pos["offchainId"]).exists()


@pytest.mark.django_db(transaction=True)
def test_u64_max_mints_and_one_more_overflows_in_the_program(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    token = instrument(api, authority=authority, decimals=0)
    pos = position(api, owner, token)
    body = settled(mint(api, at(pos), {"lamports": U64_MAX}))
    assert balance(chain, pos["onchainId"]) == U64_MAX
    assert _tx(body).effects_applied_at is not None and _tx(body).effects["movement"]["legs"][0]["amount"] == str(U64_MAX)
    from django.db import connection

    # SQLite keeps numbers past 2^63 as doubles (15 significant digits read back:
    # docs/positions.md); PostgreSQL keeps them exactly.
    assert _supply(token) == U64_MAX if connection.vendor == "postgresql" else abs(_supply(token) - U64_MAX) < U64_MAX * 10**-14
    error = assert_error(mint(api, at(pos), {"amount": "1"}), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "overflow" in error["errors"][0]["message"].lower()
    assert balance(chain, pos["onchainId"]) == U64_MAX


@pytest.mark.django_db(transaction=True)
def test_a_retried_mint_is_replayed_not_minted_twice(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    request_id = uuid.uuid4()
    first = mint(api, at(pos), {"lamports": 42}, request_id=request_id)
    second = mint(api, at(pos), {"lamports": 42}, request_id=request_id)
    assert first.status_code == second.status_code == 200
    assert second["x-idempotent-replay"] == "true" and second.json()["svmTransaction"]["offchainId"] == first.json()["svmTransaction"]["offchainId"]
    assert Transaction.unscoped.filter(operation="positions.mint").count() == 1
    assert_error(mint(api, at(pos), {"lamports": 43}, request_id=request_id), 409, "REQUEST_ID_REUSED")
    _wait_status(_tx(first.json()), "CONFIRMED", "FINALIZED")
    assert balance(chain, pos["onchainId"]) == 42 and _supply(bond) == 42


@pytest.mark.django_db(transaction=True)
def test_other_tenants_positions_are_not_found(api, other_api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    pos = position(api, owner, bond)
    theirs_authority, theirs_owner = wallet(other_api), wallet(other_api)
    theirs = position(other_api, theirs_owner, instrument(other_api, authority=theirs_authority))
    missing = {"position": {"offchainId": str(uuid.uuid4())}}
    for lookup in (at(theirs), {"position": {"onchainId": theirs["onchainId"]}}):
        assert assert_error(mint(api, lookup, {"lamports": 1}), 404)["errors"] == assert_error(mint(api, missing, {"lamports": 1}), 404)["errors"]
        assert_error(transfer(api, at(pos), lookup, {"lamports": 1}), 404)
        assert_error(burn(api, lookup, {"lamports": 1}), 404)


@pytest.mark.django_db(transaction=True)
def test_a_freeze_or_pause_recorded_while_building_is_refused_in_the_write_phase(api, celery_worker_process, chain, monkeypatch):
    """The write phase re-checks under the source rows' lock what the read phase saw: a
    freeze (or pause) recorded between the two is refused, nothing is recorded."""
    from positions import movement

    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    token = instrument(api, authority=authority, version="TOKEN_2022", pausableAuthority=authority)
    a, b = position(api, alice, token), position(api, bob, token)
    settled(mint(api, at(a), {"lamports": 10}))
    real_build = movement.transaction_build
    meanwhile = []

    def build_then(**kwargs):
        prepared = real_build(**kwargs)
        meanwhile.pop()()
        return prepared

    monkeypatch.setattr(movement, "transaction_build", build_then)
    before = Transaction.unscoped.count()
    meanwhile.append(lambda: Position.unscoped.filter(offchain_id=a["offchainId"]).update(frozen=True))
    assert_error(transfer(api, at(a), {"owner": wallet(api), "financialInstrument": token}, {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.source")
    Position.unscoped.filter(offchain_id=a["offchainId"]).update(frozen=False)
    meanwhile.append(lambda: Position.unscoped.filter(offchain_id=b["offchainId"]).update(frozen=True))
    assert_error(transfer(api, at(a), at(b), {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.destination")
    Position.unscoped.filter(offchain_id=b["offchainId"]).update(frozen=False)
    meanwhile.append(lambda: FinancialInstrument.unscoped.filter(offchain_id=token["offchainId"]).update(paused=True))
    assert_error(burn(api, at(a), {"lamports": 1}), 400, "INSTRUMENT_PAUSED")
    assert Transaction.unscoped.count() == before and Position.unscoped.count() == 2
    assert balance(chain, a["onchainId"]) == 10
