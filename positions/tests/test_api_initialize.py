"""Initialize Position and Fetch Position Details on the local node; token accounts are
read back with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey
from spl.token.instructions import create_associated_token_account, get_associated_token_address

from conftest import assert_error
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from positions.models import Position, PositionStatus
from positions.onchain import decode_token_account
from transactions.tests.chainkit import funded, send

from .kit import details, initialize, instrument, position, wallet

pytestmark = pytest.mark.chain



@pytest.mark.django_db(transaction=True)
def test_initialize_creates_the_owners_associated_token_account(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    created = position(api, owner, bond)
    record = Position.unscoped.select_related("owner", "account").get(offchain_id=created["offchainId"])
    expected = get_associated_token_address(Pubkey.from_string(record.owner.address), Pubkey.from_string(bond["onchainId"]), TOKEN_PROGRAM_ID)
    assert created["onchainId"] == str(expected)
    info = chain.get_account_info(expected).value
    assert info.owner == TOKEN_PROGRAM_ID
    state = decode_token_account(bytes(info.data))
    assert (state.mint, state.owner, state.amount, state.frozen) == (bond["onchainId"], record.owner.address, 0, False)
    assert chain.get_token_account_balance(expected).value.amount == "0"
    assert record.status == PositionStatus.ACTIVE and record.account.type == "ASSET_TOKEN_ACCOUNT" and record.account.status == "ACTIVE"

    body = details(api, {"owner": owner, "financialInstrument": bond}).json()
    assert body["onchainId"] == str(expected) and body["status"] == "ACTIVE" and body["state"] == "INITIALIZED"
    assert body["balance"] == {"amount": 0, "lamports": 0} and body["isAssociated"] is True
    assert body["account"]["offchain"]["tokenDecimals"] == 2
    assert details(api, {"position": {"onchainId": str(expected)}}).json()["offchainId"] == created["offchainId"]


@pytest.mark.django_db(transaction=True)
def test_initializing_twice_is_409_and_changes_nothing(api, celery_worker_process):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    position(api, owner, bond)
    assert_error(initialize(api, owner, bond), 409, "DUPLICATE_POSITION")
    assert Position.unscoped.count() == 1


@pytest.mark.django_db(transaction=True)
def test_existing_associated_account_is_409_unless_onboarded(api, celery_worker_process, chain):
    owner_key = funded(chain)
    authority, owner = wallet(api), wallet(api, owner_key)
    bond = instrument(api, authority=authority)
    # Someone creates the owner's associated token account outside the service.
    mint = Pubkey.from_string(bond["onchainId"])
    send(chain, owner_key, [create_associated_token_account(owner_key.pubkey(), owner_key.pubkey(), mint)])
    assert_error(initialize(api, owner, bond), 409, "POSITION_EXISTS_ONCHAIN")
    assert not Position.unscoped.exists()
    assert_error(initialize(api, owner, bond, wait=False, alreadyOnchain=True, associated=False), 400, "CONFLICTING_FIELDS", "itemData.associated")
    response = initialize(api, owner, bond, wait=False, alreadyOnchain=True)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"] is None
    assert body["newPosition"]["onchainId"] == str(get_associated_token_address(owner_key.pubkey(), mint))
    assert details(api, {"owner": owner, "financialInstrument": bond}).json()["status"] == "ACTIVE"


@pytest.mark.django_db(transaction=True)
def test_token2022_position_of_its_own_key_is_sized_like_the_associated_one(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    mint = instrument(api, authority=authority, version="TOKEN_2022", pausableAuthority=authority)
    own = position(api, owner, mint, associated=False)
    ata = position(api, wallet(api), mint)
    own_info = chain.get_account_info(Pubkey.from_string(own["onchainId"])).value
    ata_info = chain.get_account_info(Pubkey.from_string(ata["onchainId"])).value
    assert own_info.owner == ata_info.owner == TOKEN_2022_PROGRAM_ID
    # The associated one carries ImmutableOwner besides what the mint requires.
    assert len(own_info.data) + 4 == len(ata_info.data)
    assert details(api, {"position": {"offchainId": own["offchainId"]}}).json()["isAssociated"] is False


@pytest.mark.django_db(transaction=True)
def test_default_frozen_instrument_yields_frozen_positions(api, celery_worker_process, chain):
    authority, owner = wallet(api), wallet(api)
    mint = instrument(api, authority=authority, version="TOKEN_2022", defaultPositionState="FROZEN")
    created = position(api, owner, mint)
    state = decode_token_account(bytes(chain.get_account_info(Pubkey.from_string(created["onchainId"])).value.data))
    assert state.frozen is True
    assert details(api, {"position": {"offchainId": created["offchainId"]}}).json()["state"] == "FROZEN"


@pytest.mark.django_db(transaction=True)
def test_other_tenants_position_is_not_found(api, other_api, celery_worker_process):
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    created = position(api, owner, bond)
    assert_error(details(other_api, {"position": {"offchainId": created["offchainId"]}}), 404)
    assert_error(details(other_api, {"position": {"onchainId": created["onchainId"]}}), 404)
