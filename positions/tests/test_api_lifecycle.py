"""Update, Freeze, Unfreeze and Inactivate Position on the local node with the real worker;
token accounts are read back with an unmodified solana-py client."""

from __future__ import annotations

import uuid

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.instructions import CloseAccountParams, MintToCheckedParams, close_account, mint_to_checked

from conftest import assert_error, make_client
from instruments.token2022.constants import TOKEN_PROGRAM_ID
from positions import lifecycle
from positions.models import Position, PositionStatus
from positions.onchain import decode_token_account
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions.models import Transaction
from transactions.responses import wait_for
from transactions.tests.chainkit import funded, send

from .kit import BASE, details, instrument, position, wallet

pytestmark = pytest.mark.chain



def call(api, path: str, item: dict, *, wait: bool = True, request_id=None):
    return api.call("patch", BASE + path + ("?wait=confirmed" if wait else ""), {"itemData": item}, request_id=request_id)


def freeze(api, lookup: dict, *, wait: bool = True, request_id=None, **extra):
    return call(api, "/freeze", {"position": {**lookup, **extra}}, wait=wait, request_id=request_id)


def unfreeze(api, lookup: dict, *, wait: bool = True, **extra):
    return call(api, "/unfreeze", {"position": {**lookup, **extra}}, wait=wait)


def inactivate(api, lookup: dict, *, wait: bool = True, **item):
    return call(api, "/inactivate", {"position": lookup, **item}, wait=wait)


def update(api, lookup: dict, *, wait: bool = True, **item):
    return call(api, "", {"position": lookup, **item}, wait=wait)


def landed(response, name: str, created: dict) -> dict:
    """A 200 mutation answer naming the position, its transaction confirmed."""
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body[name] == {"onchainId": created["onchainId"], "offchainId": created["offchainId"]}
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), body
    return body


def onchain(chain, address: str):
    info = chain.get_account_info(Pubkey.from_string(address)).value
    return decode_token_account(bytes(info.data)) if info is not None else None


def record(created: dict) -> Position:
    return Position.unscoped.select_related("account").get(offchain_id=created["offchainId"])


def by_id(created: dict) -> dict:
    return {"position": {"offchainId": created["offchainId"]}}


def inject_after_build(monkeypatch, competitor):
    """Run ``competitor`` once, right after the request under test built and signed its
    transaction and before its write phase (docs/style.md, "Locks and races")."""
    real = lifecycle.transaction_build
    armed, results = [True], []

    def build_then_compete(**kwargs):
        prepared = real(**kwargs)
        if armed and armed.pop():
            results.append(competitor())
        return prepared

    monkeypatch.setattr(lifecycle, "transaction_build", build_then_compete)
    return results


@pytest.fixture
def bond_position(api, celery_worker_process):
    """An SPL bond (mint and freeze authority a managed wallet) and a position of a managed owner."""
    authority, owner = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    return {"authority": authority, "owner": owner, "bond": bond, "position": position(api, owner, bond)}


# --- Freeze / Unfreeze -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_freeze_and_unfreeze_follow_the_chain(api, chain, bond_position):
    created = bond_position["position"]
    lookup = {"owner": bond_position["owner"], "financialInstrument": bond_position["bond"]}
    landed(freeze(api, lookup), "frozenPosition", created)
    assert onchain(chain, created["onchainId"]).frozen is True
    frozen = record(created)
    assert frozen.frozen is True and frozen.pending_transaction_id is None and frozen.last_transaction_at is not None
    assert details(api, by_id(created)).json()["state"] == "FROZEN"

    assert_error(freeze(api, lookup), 400, "ALREADY_FROZEN", "itemData.position")
    assert Transaction.unscoped.filter(operation="positions.freeze").count() == 1

    landed(unfreeze(api, by_id(created)), "unfrozenPosition", created)
    assert onchain(chain, created["onchainId"]).frozen is False
    assert record(created).frozen is False and details(api, by_id(created)).json()["state"] == "INITIALIZED"
    assert_error(unfreeze(api, by_id(created)), 400, "NOT_FROZEN", "itemData.position")
    assert Transaction.unscoped.filter(operation="positions.unfreeze").count() == 1


@pytest.mark.django_db(transaction=True)
def test_default_frozen_token2022_position_is_unfrozen_by_the_named_freeze_authority(api, chain, celery_worker_process):
    authority, owner = wallet(api), wallet(api)
    mint = instrument(api, authority=authority, version="TOKEN_2022", defaultPositionState="FROZEN")
    created = position(api, owner, mint)
    assert onchain(chain, created["onchainId"]).frozen is True
    landed(unfreeze(api, by_id(created), freezeAuthority=authority), "unfrozenPosition", created)
    assert onchain(chain, created["onchainId"]).frozen is False and record(created).frozen is False


@pytest.mark.django_db(transaction=True)
def test_freeze_with_the_wrong_authority_or_none_is_400_and_records_nothing(api, celery_worker_process, bond_position):
    created = bond_position["position"]
    stranger = wallet(api)
    assert_error(freeze(api, by_id(created), freezeAuthority=stranger), 400, "AUTHORITY_MISMATCH", "itemData.position.freezeAuthority")
    assert_error(freeze(api, by_id(created), freezeAuthority={"onchainId": str(Keypair().pubkey()), "offPlatform": True}), 400, "AUTHORITY_MISMATCH")

    no_freeze = instrument(api, authority=bond_position["authority"], freezeAuthority=None)
    other = position(api, bond_position["owner"], no_freeze)
    assert_error(freeze(api, by_id(other)), 400, "NO_FREEZE_AUTHORITY", "itemData.position")
    assert not Transaction.unscoped.filter(operation__startswith="positions.freeze").exists()
    assert record(created).frozen is False and record(created).pending_transaction_id is None


@pytest.mark.django_db(transaction=True)
def test_freeze_authority_off_platform_leaves_it_partially_signed_and_one_at_a_time(api, celery_worker_process):
    authority, owner = wallet(api), wallet(api)
    outside = wallet(api, managed=False, address=str(Keypair().pubkey()))
    bond = instrument(api, authority=authority, freezeAuthority=outside)
    created = position(api, owner, bond)
    response = freeze(api, by_id(created))
    assert response.status_code == 200, response.json()
    tx = response.json()["svmTransaction"]
    assert tx["status"] == "PARTIALLY_SIGNED"
    assert record(created).pending_transaction.offchain_id == uuid.UUID(tx["offchainId"])
    # The marker holds until the transaction ends: a second freeze or an unfreeze waits.
    assert_error(freeze(api, by_id(created)), 409, "OPERATION_IN_PROGRESS", "itemData.position")
    assert record(created).frozen is False


@pytest.mark.django_db(transaction=True)
def test_concurrent_second_freeze_is_409_and_runs_once(api, monkeypatch, bond_position):
    created = bond_position["position"]
    competing = inject_after_build(monkeypatch, lambda: freeze(api, by_id(created), wait=False))
    first = freeze(api, by_id(created), wait=False)
    assert competing[0].status_code == 200, competing[0].json()
    assert_error(first, 409, "OPERATION_IN_PROGRESS", "itemData.position")
    tx = Transaction.unscoped.get(operation="positions.freeze")
    assert record(created).pending_transaction_id == tx.pk
    monkeypatch.undo()
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    settled = record(created)
    assert settled.frozen is True and settled.pending_transaction_id is None


@pytest.mark.django_db(transaction=True)
def test_freeze_rechecks_what_a_confirmation_changed_while_it_was_being_built(api, monkeypatch, bond_position):
    created = bond_position["position"]
    competing = inject_after_build(monkeypatch, lambda: freeze(api, by_id(created)))
    first = freeze(api, by_id(created), wait=False)
    assert competing[0].json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), competing[0].json()
    assert_error(first, 400, "ALREADY_FROZEN", "itemData.position")
    assert Transaction.unscoped.filter(operation="positions.freeze").count() == 1


@pytest.mark.django_db(transaction=True)
def test_freeze_replays_with_the_same_request_id(api, chain, bond_position):
    created = bond_position["position"]
    rid = uuid.uuid4()
    first = freeze(api, by_id(created), request_id=rid, wait=False)
    second = freeze(api, by_id(created), request_id=rid, wait=False)
    assert first.status_code == second.status_code == 200
    assert second["x-idempotent-replay"] == "true" and first.content == second.content
    assert Transaction.unscoped.filter(operation="positions.freeze").count() == 1
    wait_for(Transaction.unscoped.get(operation="positions.freeze"), "confirmed")
    assert onchain(chain, created["onchainId"]).frozen is True


@pytest.mark.django_db(transaction=True)
def test_another_tenants_position_is_not_found_and_unchanged(api, other_api, bond_position):
    created = bond_position["position"]
    before = Position.unscoped.values().get(offchain_id=created["offchainId"])
    for lookup in (by_id(created), {"position": {"onchainId": created["onchainId"]}}):
        assert_error(freeze(other_api, lookup), 404)
        assert_error(unfreeze(other_api, lookup), 404)
        assert_error(inactivate(other_api, lookup), 404)
        assert_error(update(other_api, lookup, offchainReferences={"name": "theirs"}), 404)
        assert_error(update(other_api, lookup, delegate=None), 404)
    assert other_api.call("post", BASE + "/bulk/identifiers", {}).json() == {"count": 0, "items": []}
    assert Position.unscoped.values().get(offchain_id=created["offchainId"]) == before
    assert not Transaction.unscoped.filter(operation__in=["positions.freeze", "positions.unfreeze", "positions.inactivate", "positions.revoke"]).exists()


# --- Inactivate ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_inactivate_closes_the_empty_token_account_and_returns_its_rent_to_the_owner(api, chain, bond_position):
    created, owner = bond_position["position"], record(bond_position["position"]).owner
    rent = chain.get_balance(Pubkey.from_string(created["onchainId"])).value
    before = chain.get_balance(Pubkey.from_string(owner.address)).value
    landed(inactivate(api, by_id(created)), "inactivatedPosition", created)
    assert chain.get_account_info(Pubkey.from_string(created["onchainId"])).value is None
    # The platform fee payer pays the fee: the owner gets the whole rent.
    assert chain.get_balance(Pubkey.from_string(owner.address)).value == before + rent
    closed = record(created)
    assert closed.status == PositionStatus.INACTIVE and closed.account.status == "INACTIVE" and closed.pending_transaction_id is None
    assert details(api, by_id(created)).json()["status"] == "INACTIVE"
    assert_error(inactivate(api, by_id(created)), 400, "POSITION_INACTIVE", "itemData.position")
    assert_error(freeze(api, by_id(created)), 400, "POSITION_INACTIVE")

    # Initializing it again reuses the records (same offchainId).
    again = position(api, bond_position["owner"], bond_position["bond"])
    assert again["offchainId"] == created["offchainId"] and onchain(chain, created["onchainId"]) is not None


@pytest.mark.django_db(transaction=True)
def test_inactivate_sends_the_rent_to_the_refund_destination(api, chain, bond_position):
    created = bond_position["position"]
    destination = str(Keypair().pubkey())
    rent = chain.get_balance(Pubkey.from_string(created["onchainId"])).value
    landed(inactivate(api, by_id(created), refundDestination={"onchainId": destination, "offPlatform": True}), "inactivatedPosition", created)
    assert chain.get_balance(Pubkey.from_string(destination)).value == rent
    assert_error(inactivate(api, by_id(position(api, wallet(api), bond_position["bond"])), refundDestination={"onchainId": created["onchainId"], "offPlatform": True}), 400)


@pytest.mark.django_db(transaction=True)
def test_token2022_position_of_a_paused_mint_is_closed(api, chain, celery_worker_process):
    # Pausing stops transfers, mints and burns; closing an empty token account still works.
    authority, owner = wallet(api), wallet(api)
    mint = instrument(api, authority=authority, version="TOKEN_2022", pausableAuthority=authority)
    created = position(api, owner, mint)
    paused = api.call("patch", "/api/v1/financial-instruments/pause?wait=confirmed", {"itemData": {"financialInstrument": mint}})
    assert paused.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), paused.json()
    landed(inactivate(api, by_id(created)), "inactivatedPosition", created)
    assert chain.get_account_info(Pubkey.from_string(created["onchainId"])).value is None
    assert record(created).status == PositionStatus.INACTIVE


@pytest.mark.django_db(transaction=True)
def test_inactivate_with_tokens_on_the_network_is_400_and_changes_nothing(api, chain, celery_worker_process):
    authority_key = funded(chain)
    authority, owner = wallet(api, authority_key), wallet(api)
    bond = instrument(api, authority=authority)
    created = position(api, owner, bond)
    # Tokens minted to the position outside the service: the chain decides, not the record.
    send(chain, authority_key, [mint_to_checked(MintToCheckedParams(program_id=TOKEN_PROGRAM_ID, mint=Pubkey.from_string(bond["onchainId"]),
                                                                   dest=Pubkey.from_string(created["onchainId"]), mint_authority=authority_key.pubkey(), amount=5, decimals=2))])
    assert_error(inactivate(api, by_id(created)), 400, "BALANCE_NOT_ZERO", "itemData.position")
    assert onchain(chain, created["onchainId"]).amount == 5
    assert record(created).status == PositionStatus.ACTIVE and not Transaction.unscoped.filter(operation="positions.inactivate").exists()


@pytest.mark.django_db(transaction=True)
def test_inactivating_a_frozen_position_is_400(api, chain, bond_position):
    created = bond_position["position"]
    landed(freeze(api, by_id(created)), "frozenPosition", created)
    assert_error(inactivate(api, by_id(created)), 400, "POSITION_FROZEN", "itemData.position")
    assert onchain(chain, created["onchainId"]) is not None and record(created).status == PositionStatus.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_token_account_closed_outside_the_service_is_inactivated_without_a_transaction(api, chain, celery_worker_process):
    owner_key = funded(chain)
    authority, owner = wallet(api), wallet(api, owner_key)
    bond = instrument(api, authority=authority)
    created = position(api, owner, bond)
    send(chain, owner_key, [close_account(CloseAccountParams(program_id=TOKEN_PROGRAM_ID, account=Pubkey.from_string(created["onchainId"]), dest=owner_key.pubkey(), owner=owner_key.pubkey()))])
    assert_error(freeze(api, by_id(created)), 400, "POSITION_NOT_ONCHAIN", "itemData.position")
    assert_error(update(api, by_id(created), delegate={"account": authority, "value": {"lamports": 1}}), 400, "POSITION_NOT_ONCHAIN")
    response = inactivate(api, by_id(created), wait=False)
    assert response.status_code == 200, response.json()
    assert response.json() == {"inactivatedPosition": {"onchainId": created["onchainId"], "offchainId": created["offchainId"]}, "svmTransaction": None}
    assert record(created).status == PositionStatus.INACTIVE and record(created).account.status == "INACTIVE"


# --- Update ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_update_changes_only_the_offchain_fields_present(api, tenant, bond_position):
    created = bond_position["position"]
    response = update(api, by_id(created), offchainReferences={"code": "POS-1", "name": "Bond position"},
                      tokenDebitLimits=[{"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 100}])
    assert response.status_code == 200, response.json()
    assert response.json() == {"updatedPosition": {"onchainId": created["onchainId"], "offchainId": created["offchainId"]}, "svmTransaction": None}
    assert update(api, by_id(created), offchainReferences={"name": "Renamed"}).status_code == 200
    body = details(api, {"position": {"offchainReferences": {"code": "POS-1"}}}).json()
    assert body["account"]["offchain"]["code"] == "POS-1" and body["account"]["offchain"]["name"] == "Renamed"
    assert body["tokenDebitLimits"] == [{"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 100, "durationHours": None}]

    assert_error(update(api, by_id(created), tokenDebitApiKeys=["ak_x"]), 403, "MISSING_ROLE", "itemData.tokenDebitApiKeys")
    privileged = make_client(issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS]).secret)
    assert update(privileged, by_id(created), tokenDebitApiKeys=["ak_x"], tokenDebitLimits=None).status_code == 200
    body = details(api, by_id(created)).json()
    assert body["tokenDebitApiKeys"] == ["ak_x"] and body["tokenDebitLimits"] is None and body["account"]["offchain"]["code"] == "POS-1"
    assert_error(update(api, by_id(created), offchainReferences={"type": "FUNDS_TOKEN_ACCOUNT"}), 400, "INVALID_ACCOUNT_TYPE")
    assert not Transaction.unscoped.filter(operation__startswith="positions.").exclude(operation="positions.initialize").exists()


@pytest.mark.django_db(transaction=True)
def test_token_debit_limits_need_a_wallet_owner(api, celery_worker_process):
    authority = wallet(api)
    treasury = wallet(api, offchainReferences={"type": "TOKEN_MANAGEMENT_AUTHORITY"})
    created = position(api, treasury, instrument(api, authority=authority))
    limits = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 1}]
    assert_error(update(api, by_id(created), tokenDebitLimits=limits), 400, "LIMITS_NOT_APPLICABLE", "itemData.tokenDebitLimits")
    assert record(created).token_debit_limits is None


@pytest.mark.django_db(transaction=True)
def test_delegate_is_approved_and_revoked_on_the_network(api, chain, bond_position):
    created = bond_position["position"]
    delegate = str(Keypair().pubkey())
    landed(update(api, by_id(created), delegate={"account": {"onchainId": delegate, "offPlatform": True}, "value": {"amount": "1.5"}}), "updatedPosition", created)
    state = onchain(chain, created["onchainId"])
    assert (state.delegate, state.delegated_amount) == (delegate, 150)
    assert details(api, by_id(created)).json()["delegate"] == {"onchainId": delegate, "delegatedAmount": {"amount": 1.5, "lamports": 150}}
    assert Transaction.unscoped.get(operation="positions.approve").status in ("CONFIRMED", "FINALIZED")

    landed(update(api, by_id(created), delegate=None), "updatedPosition", created)
    state = onchain(chain, created["onchainId"])
    assert (state.delegate, state.delegated_amount) == (None, 0)
    assert details(api, by_id(created)).json()["delegate"] is None and record(created).pending_transaction_id is None
    assert_error(update(api, by_id(created), delegate=None), 400, "NO_DELEGATE", "itemData.delegate")
    assert_error(update(api, by_id(created), delegate={"account": {"onchainId": delegate, "offPlatform": True}, "value": {"lamports": 0}}), 400, "INVALID_AMOUNT")
    assert_error(update(api, by_id(created), delegate={"account": {"onchainId": delegate, "offPlatform": True}, "value": {"amount": "0.001"}}), 400, "TOO_MANY_DECIMALS")


@pytest.mark.django_db(transaction=True)
def test_delegate_of_a_frozen_position_is_400(api, bond_position):
    created = bond_position["position"]
    landed(freeze(api, by_id(created)), "frozenPosition", created)
    assert_error(update(api, by_id(created), delegate={"account": bond_position["authority"], "value": {"lamports": 1}}), 400, "POSITION_FROZEN")
    assert not Transaction.unscoped.filter(operation="positions.approve").exists()


@pytest.mark.django_db(transaction=True)
def test_delegate_of_an_unmanaged_owner_waits_for_its_signature_one_change_at_a_time(api, celery_worker_process):
    authority = wallet(api)
    owner = wallet(api, managed=False, address=str(Keypair().pubkey()))
    created = position(api, owner, instrument(api, authority=authority))
    approve = {"account": authority, "value": {"lamports": 10}}
    response = update(api, by_id(created), delegate=approve)
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED", response.json()
    assert_error(update(api, by_id(created), delegate=approve), 409, "OPERATION_IN_PROGRESS", "itemData.position")
    # Offchain-only changes are not held up by a transaction in flight.
    assert update(api, by_id(created), offchainReferences={"name": "still editable"}).status_code == 200
    assert record(created).delegate_address == ""
