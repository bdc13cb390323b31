"""Movements of Token-2022 instruments on the local node: paused mints, frozen positions,
confidential mints, the Scaled UI Amount multiplier, the permanent delegate and
transfer-hook mints."""

from __future__ import annotations

import base64

import pytest
from solders.keypair import Keypair

from conftest import assert_error
from instruments.models import FinancialInstrument
from instruments.token2022.constants import TOKEN_PROGRAM_ID
from positions.models import Position
from transactions.models import Transaction

from .kit import instrument, position, wallet
from .movekit import at, balance, burn, mint, settled, trade, transfer

pytestmark = pytest.mark.chain



def _b64(n: int) -> str:
    return base64.b64encode(bytes(range(1, n + 1))).decode()


def _nothing_recorded_since(count: int) -> bool:
    return Transaction.unscoped.filter(operation__startswith="positions.").exclude(operation="positions.initialize").count() == count


def _movements() -> int:
    return Transaction.unscoped.filter(operation__startswith="positions.").exclude(operation="positions.initialize").count()


@pytest.mark.django_db(transaction=True)
def test_paused_instrument_refuses_movements_before_building_and_the_program_backs_it_up(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    mint_lookup = instrument(api, authority=authority, version="TOKEN_2022", pausableAuthority=authority)
    a, b = position(api, alice, mint_lookup), position(api, bob, mint_lookup)
    settled(mint(api, at(a), {"lamports": 100}))
    paused = api.call("patch", "/api/v1/financial-instruments/pause?wait=confirmed", {"itemData": {"financialInstrument": mint_lookup}})
    assert paused.status_code == 200, paused.json()
    before = _movements()
    assert_error(mint(api, at(a), {"lamports": 1}), 400, "INSTRUMENT_PAUSED", "itemData.position")
    assert_error(burn(api, at(a), {"lamports": 1}), 400, "INSTRUMENT_PAUSED", "itemData.position")
    assert_error(transfer(api, at(a), at(b), {"lamports": 1}), 400, "INSTRUMENT_PAUSED", "itemData.source")
    assert_error(trade(api, [{"source": at(a), "destination": at(b), "value": {"lamports": 1}}] * 2), 400, "INSTRUMENT_PAUSED")
    # A record that has not caught up with the chain yet: the simulation refuses with the program's reason.
    FinancialInstrument.unscoped.filter(offchain_id=mint_lookup["offchainId"]).update(paused=False)
    error = assert_error(transfer(api, at(a), at(b), {"lamports": 1}), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "paused" in error["errors"][0]["message"].lower()
    assert _nothing_recorded_since(before) and (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (100, 0)
    FinancialInstrument.unscoped.filter(offchain_id=mint_lookup["offchainId"]).update(paused=True)
    assert api.call("patch", "/api/v1/financial-instruments/unpause?wait=confirmed", {"itemData": {"financialInstrument": mint_lookup}}).status_code == 200
    settled(transfer(api, at(a), at(b), {"lamports": 1}))
    assert balance(chain, b["onchainId"]) == 1


@pytest.mark.django_db(transaction=True)
def test_frozen_positions_neither_send_nor_receive(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    cold = instrument(api, authority=authority, version="TOKEN_2022", defaultPositionState="FROZEN")
    a = position(api, alice, cold)
    before = _movements()
    assert_error(mint(api, at(a), {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.position")
    assert_error(burn(api, at(a), {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.position")
    # A position created on the way would start frozen: refused before building.
    assert_error(mint(api, {"owner": bob, "financialInstrument": cold}, {"lamports": 1}, createIfMissing=True), 400, "POSITION_FROZEN")
    outsider = {"owner": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}, "financialInstrument": cold}
    assert_error(transfer(api, at(a), outsider, {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.source")
    # The record not knowing of the freeze yet: the program's reason.
    Position.unscoped.filter(offchain_id=a["offchainId"]).update(frozen=False)
    assert_error(transfer(api, at(a), outsider, {"lamports": 1}), 400, "POSITION_FROZEN", "itemData.destination")
    error = assert_error(mint(api, at(a), {"lamports": 1}), 400, "TRANSACTION_SIMULATION_FAILED")
    assert "frozen" in error["errors"][0]["message"].lower()
    assert _nothing_recorded_since(before) and Position.unscoped.count() == 1 and balance(chain, a["onchainId"]) == 0


@pytest.mark.django_db(transaction=True)
def test_confidential_mint_and_burn_needs_proofs_the_service_cannot_make(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    secret = instrument(api, authority=authority, version="TOKEN_2022", confidentialTransfer={}, confidentialMintBurn={"supplyElgamalPubkey": _b64(32), "decryptableSupply": _b64(36)})
    a, b = position(api, alice, secret), position(api, bob, secret)
    before = _movements()
    for response, field in (
        (mint(api, at(a), {"lamports": 1}), "itemData.position"),
        (burn(api, at(a), {"lamports": 1}), "itemData.position"),
        (transfer(api, at(a), at(b), {"lamports": 1}), "itemData.source"),
        (trade(api, [{"source": at(a), "destination": at(b), "value": {"lamports": 1}}] * 2), "itemData.legs[0].source"),
    ):
        error = assert_error(response, 400, "CONFIDENTIAL_PROOFS_REQUIRED", field)
        assert "zero-knowledge proofs" in error["errors"][0]["message"] and "does not fall back" in error["errors"][0]["message"]
    assert _nothing_recorded_since(before)


@pytest.mark.django_db(transaction=True)
def test_confidential_transfer_only_mints_move_like_any_other(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    shielded = instrument(api, authority=authority, version="TOKEN_2022", confidentialTransfer={"autoApproveNewPositions": True})
    a = position(api, alice, shielded)
    settled(mint(api, at(a), {"lamports": 80}))
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": shielded}, {"lamports": 30}), 201)
    settled(burn(api, at(a), {"lamports": 10}))
    assert (balance(chain, a["onchainId"]), balance(chain, body["destinationPosition"]["onchainId"])) == (40, 30)


@pytest.mark.django_db(transaction=True)
def test_scaled_ui_amounts_follow_the_multiplier_both_ways(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    scaled = instrument(api, authority=authority, version="TOKEN_2022", decimals=2, scaledUiAmountAuthority=authority, scaledUiAmountMultiplier=2.5)
    a = position(api, alice, scaled)
    settled(mint(api, at(a), {"amount": "5"}))  # 5 displayed = 500 / 2.5 = 200 base units
    assert balance(chain, a["onchainId"]) == 200
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": scaled}, {"amount": "2.5"}), 201)
    b = body["destinationPosition"]
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (100, 100)
    settled(transfer(api, at(a), at(b), {"amount": "0.03"}))  # 3 / 2.5 = 1.2: rounded down, never more than asked
    assert balance(chain, b["onchainId"]) == 101
    assert_error(mint(api, at(a), {"amount": "0.01"}), 400, "INVALID_AMOUNT")  # 0.4 base units
    assert_error(mint(api, at(a), {"amount": "5", "lamports": 201}), 400, "VALUE_MISMATCH")
    # Round trip: what was minted as 5 displayed burns as 5 displayed.
    settled(transfer(api, at(b), at(a), {"lamports": 101}))
    settled(burn(api, at(a), {"amount": "5"}))
    assert balance(chain, a["onchainId"]) == 0
    assert int(FinancialInstrument.unscoped.get(offchain_id=scaled["offchainId"]).supply_offchain) == 0


@pytest.mark.django_db(transaction=True)
def test_permanent_delegate_burns_and_transfers_from_any_position(api, celery_worker_process, chain):
    owner_key = Keypair()
    authority, delegate, stranger, bob = wallet(api), wallet(api), wallet(api), wallet(api)
    alice = wallet(api, managed=False, address=str(owner_key.pubkey()))  # the service cannot sign for her
    token = instrument(api, authority=authority, version="TOKEN_2022", permanentDelegateAuthority=delegate)
    a, b = position(api, alice, token), position(api, bob, token)
    settled(mint(api, at(a), {"lamports": 100}))
    settled(burn(api, at(a), {"lamports": 10}, authority=delegate))
    settled(transfer(api, at(a), at(b), {"lamports": 20}, authority=delegate))
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (70, 20)
    # Her own signature is missing: PARTIALLY_SIGNED.
    response = burn(api, at(a), {"lamports": 1})
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED"
    assert_error(burn(api, at(a), {"lamports": 1}, authority=stranger), 400, "AUTHORITY_MISMATCH", "itemData.authority")
    # Without the extension nobody but the owner (or its delegate) debits a position.
    plain = instrument(api, authority=authority, version="TOKEN_2022")
    c = position(api, bob, plain)
    settled(mint(api, at(c), {"lamports": 5}))
    assert_error(burn(api, at(c), {"lamports": 1}, authority=delegate), 400, "AUTHORITY_MISMATCH")
    assert balance(chain, a["onchainId"]) == 70 and balance(chain, c["onchainId"]) == 5


@pytest.mark.django_db(transaction=True)
def test_transfer_hook_mint_without_a_hook_program_transfers(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    hooked = instrument(api, authority=authority, version="TOKEN_2022", transferHookAuthority=authority)
    a = position(api, alice, hooked)
    settled(mint(api, at(a), {"lamports": 9}))
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": hooked}, {"lamports": 4}), 201)
    assert balance(chain, body["destinationPosition"]["onchainId"]) == 4


@pytest.mark.django_db(transaction=True)
def test_transfer_hook_without_extra_account_list_is_refused_before_building(api, celery_worker_process, chain):
    """The hook program must publish its ExtraAccountMetaList for the mint; resolution of
    a published list is tested on bytes (instruments/tests/test_transfer_hook_accounts.py)
    until the project has a hook program of its own to run on the node."""
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    program = {"onchainId": str(TOKEN_PROGRAM_ID), "offPlatform": True}  # executable, but no hook
    hooked = instrument(api, authority=authority, version="TOKEN_2022", transferHookAuthority=authority, transferHookProgram=program)
    a, b = position(api, alice, hooked), position(api, bob, hooked)
    settled(mint(api, at(a), {"lamports": 9}))  # minting invokes no hook
    before = _movements()
    error = assert_error(transfer(api, at(a), at(b), {"lamports": 4}), 400, "TRANSFER_HOOK_UNRESOLVED", "itemData")
    assert "extra-account list" in error["errors"][0]["message"]
    assert _nothing_recorded_since(before) and (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (9, 0)
