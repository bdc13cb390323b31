"""A restricted instrument's whole life through the API on the local node: Create names the
allow-list hook (the list is initialized in the creation transaction), owners are added and
removed through Add/Remove Allow-List Owners, positions and transfers to owners not on the
list are refused before anything is sent, and the list read back through the API is the one
decoded from the account's bytes."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.message import from_bytes_versioned
from solders.pubkey import Pubkey

import programs

from conftest import assert_error
from positions.tests.kit import initialize, position, wallet
from positions.tests.movekit import at, balance, mint, settled, transfer
from transactions.models import Transaction

from .allowkit import BASE, HOOK, address_of, allow_list_address, change, decoded_from_bytes, fetch, fetch_response, hooked_instrument, landed, validation_address

pytestmark = pytest.mark.chain


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Rent without a funding account named comes from the localnet airdrop funder (opt-in,
    docs/accounts.md "Who pays"); the initialization test names a funding account."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def _snapshot(chain, mint_address: str, *token_accounts: str) -> tuple:
    """Everything a refusal must leave alone: the allow-list's bytes and the balances."""
    return bytes(chain.get_account_info(allow_list_address(mint_address)).value.data), tuple(balance(chain, a) for a in token_accounts)


@pytest.mark.django_db(transaction=True)
def test_a_restricted_instrument_lives_through_the_api_alone(api, celery_worker_process, chain):
    issuer = wallet(api)  # mint, freeze and transfer-hook authority, key held by the service
    alice, bob, carol = wallet(api), wallet(api), wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=8)
    listed = fetch(api, hooked)
    assert listed["initialized"] and listed["count"] == 0 and listed["capacity"] == 8
    assert listed["authority"] == {"onchainId": address_of(api, issuer), "offchainId": issuer["offchainId"]}
    assert listed["allowList"]["onchainId"] == str(allow_list_address(hooked["onchainId"]))

    added = landed(change(api, "add", hooked, [alice, bob]))
    assert len(added["svmTransactions"]) == 1  # two AddOwner instructions fit one transaction
    api_list = fetch(api, hooked)
    on_chain = decoded_from_bytes(chain, hooked["onchainId"])
    assert [o["onchainId"] for o in api_list["items"]] == on_chain["owners"] == [address_of(api, alice), address_of(api, bob)]
    assert [o["offchainId"] for o in api_list["items"]] == [alice["offchainId"], bob["offchainId"]]
    assert (on_chain["authority"], on_chain["mint"], on_chain["capacity"]) == (address_of(api, issuer), hooked["onchainId"], 8)

    a, b = position(api, alice, hooked), position(api, bob, hooked)
    settled(mint(api, at(a), {"lamports": 10}))
    settled(transfer(api, at(a), at(b), {"lamports": 4}))
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (6, 4)

    # A third owner: no position for carol, no transfer to her, and nothing reaches the chain.
    before = _snapshot(chain, hooked["onchainId"], a["onchainId"], b["onchainId"])
    recorded = Transaction.unscoped.count()
    error = assert_error(initialize(api, carol, hooked), 400, "OWNER_NOT_ALLOWED")
    assert error["errors"][0]["field"] == "itemData.owner"
    error = assert_error(transfer(api, at(a), {"owner": carol, "financialInstrument": hooked}, {"lamports": 1}), 400, "OWNER_NOT_ALLOWED")
    assert error["errors"][0]["field"] == "itemData.destination.owner"
    assert address_of(api, carol) in error["errors"][0]["message"]
    assert _snapshot(chain, hooked["onchainId"], a["onchainId"], b["onchainId"]) == before
    assert Transaction.unscoped.count() == recorded

    # Revoke bob: his position stays, but his next incoming transfer is refused.
    landed(change(api, "remove", hooked, [bob]))
    assert [o["onchainId"] for o in fetch(api, hooked)["items"]] == decoded_from_bytes(chain, hooked["onchainId"])["owners"] == [address_of(api, alice)]
    before = _snapshot(chain, hooked["onchainId"], a["onchainId"], b["onchainId"])
    error = assert_error(transfer(api, at(a), at(b), {"lamports": 1}), 400, "OWNER_NOT_ALLOWED")
    assert error["errors"][0]["field"] == "itemData.destination"
    assert _snapshot(chain, hooked["onchainId"], a["onchainId"], b["onchainId"]) == before
    assert Transaction.unscoped.count() == recorded + 1  # the removal only
    # bob may still send back to alice (the hook checks the destination's owner).
    settled(transfer(api, at(b), at(a), {"lamports": 4}))
    assert (balance(chain, a["onchainId"]), balance(chain, b["onchainId"])) == (10, 0)


@pytest.mark.django_db(transaction=True)
def test_refused_changes_name_the_owner_and_change_nothing(api, celery_worker_process, chain):
    issuer, alice, bob = wallet(api), wallet(api), wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=2)
    landed(change(api, "add", hooked, [alice]))
    before = decoded_from_bytes(chain, hooked["onchainId"])
    recorded = Transaction.unscoped.count()
    cases = [
        ("add", [bob, alice], "OWNER_ALREADY_ALLOWED", "itemData.owners[1]"),
        ("add", [bob, bob], "DUPLICATE_OWNER", "itemData.owners[1]"),
        ("add", [bob, {"onchainId": str(Keypair().pubkey()), "offPlatform": True}], "ALLOW_LIST_FULL", "itemData.owners"),
        ("add", [{"onchainId": "11111111111111111111111111111111", "offPlatform": True}], "INVALID_OWNER", "itemData.owners[0]"),
        ("remove", [bob], "OWNER_NOT_LISTED", "itemData.owners[0]"),
    ]
    for action, owners, code, field in cases:
        error = assert_error(change(api, action, hooked, owners), 400, code)
        assert error["errors"][0]["field"] == field, (code, error)
    error = assert_error(change(api, "add", hooked, [bob], authority=alice), 400, "AUTHORITY_MISMATCH")
    assert error["errors"][0]["field"] == "itemData.authority"
    assert_error(api.call("post", BASE, {"itemData": {"financialInstrument": hooked}}), 409, "ALLOW_LIST_EXISTS")
    assert decoded_from_bytes(chain, hooked["onchainId"]) == before and Transaction.unscoped.count() == recorded


@pytest.mark.django_db(transaction=True)
def test_many_owners_pack_into_few_transactions_and_read_back_in_pages(api, celery_worker_process, chain):
    issuer = wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=40)
    owners = [str(Keypair().pubkey()) for _ in range(30)]
    body = landed(change(api, "add", hooked, [{"onchainId": o, "offPlatform": True} for o in owners]))
    assert 1 < len(body["svmTransactions"]) <= 3
    assert decoded_from_bytes(chain, hooked["onchainId"])["owners"] == owners
    first, rest = fetch(api, hooked, limit=25), fetch(api, hooked, skip=25)
    assert first["count"] == rest["count"] == 30
    assert [o["onchainId"] for o in first["items"] + rest["items"]] == owners
    assert all(o["offchainId"] is None for o in rest["items"])


@pytest.mark.django_db(transaction=True)
def test_the_same_request_id_replays_and_sends_once(api, celery_worker_process, chain):
    issuer, alice = wallet(api), wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=4)
    first = landed(change(api, "add", hooked, [alice], request_id="7f1f3a52-41a4-4c5e-9d0b-0c3f7c2c1a11"))
    again = change(api, "add", hooked, [alice], request_id="7f1f3a52-41a4-4c5e-9d0b-0c3f7c2c1a11")
    assert again.status_code == 200 and again.headers.get("x-idempotent-replay") == "true"
    assert again.json()["svmTransactions"][0]["offchainId"] == first["svmTransactions"][0]["offchainId"]
    assert Transaction.unscoped.filter(operation="instruments.allow_list_add").count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_authority_the_service_does_not_hold_leaves_the_change_partially_signed(api, celery_worker_process, chain):
    issuer, alice = wallet(api), wallet(api)
    outside = Keypair()
    hooked = hooked_instrument(api, authority=issuer, allowListAuthority={"onchainId": str(outside.pubkey()), "offPlatform": True})
    assert decoded_from_bytes(chain, hooked["onchainId"])["authority"] == str(outside.pubkey())
    body = change(api, "add", hooked, [alice], wait=False).json()
    assert [t["status"] for t in body["svmTransactions"]] == ["PARTIALLY_SIGNED"]
    tx = Transaction.unscoped.get(offchain_id=body["svmTransactions"][0]["offchainId"])
    assert str(outside.pubkey()) in tx.missing_signers
    # One operation on the instrument at a time: the next change waits for this one (in-flight marker).
    assert_error(change(api, "add", hooked, [issuer]), 409, "OPERATION_IN_PROGRESS")
    assert_error(api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": hooked, "onchainData": {"uri": "https://x.example/"}}}), 409, "OPERATION_IN_PROGRESS")
    signature = outside.sign_message(bytes(tx.message))
    signed = api.call("patch", "/api/v1/transactions/sign?wait=confirmed", {"itemData": {"transaction": {"offchainId": str(tx.offchain_id)},
                                                                                   "offPlatformSigning": [{"account": {"onchainId": str(outside.pubkey()), "offPlatform": True}, "signature": str(signature)}]}})
    assert signed.status_code == 200 and signed.json()["status"] in ("CONFIRMED", "FINALIZED"), signed.json()
    assert decoded_from_bytes(chain, hooked["onchainId"])["owners"] == [address_of(api, alice)]


@pytest.mark.django_db(transaction=True)
def test_initialize_after_switching_to_the_hook_is_paid_by_the_funding_account(api, celery_worker_process, chain, settings):
    """An instrument whose hook becomes the allow-list program (Update transferHookProgram)
    has no list yet: nobody may hold it until Initialize Allow-List, whose rent comes from
    the funding account, never the platform fee payer."""
    from positions.tests.kit import instrument
    from transactions.fee_payers import platform_fee_payer
    from transactions.tests.chainkit import wait

    issuer, alice, funder = wallet(api), wallet(api), wallet(api)
    funder_address = address_of(api, funder)
    wait(chain, chain.request_airdrop(Pubkey.from_string(funder_address), 10**9).value)
    other_program = programs.LOCALNET_PROGRAM_IDS["loan_vault"]  # executable, not the allow-list hook
    refused = api.call("post", "/api/v1/financial-instruments", {"itemData": {
        "version": "TOKEN_2022", "offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}}, "mintAuthority": issuer,
        "transferHookProgram": {"onchainId": other_program, "offPlatform": True}, "allowListCapacity": 4}})
    assert assert_error(refused, 400, "NOT_ALLOW_LIST_HOOK")["errors"][0]["field"] == "itemData.allowListCapacity"
    hooked = instrument(api, authority=issuer, version="TOKEN_2022", transferHookAuthority=issuer, transferHookProgram={"onchainId": other_program, "offPlatform": True})
    assert_error(fetch_response(api, hooked), 400, "NOT_ALLOW_LIST_HOOK")
    switched = api.call("patch", "/api/v1/financial-instruments?wait=confirmed", {"itemData": {"mintAccount": hooked, "transferHookProgram": {"onchainId": str(HOOK), "offPlatform": True}}})
    assert switched.status_code == 200 and switched.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), switched.json()
    assert fetch(api, hooked)["initialized"] is False
    assert_error(initialize(api, alice, hooked), 400, "ALLOW_LIST_NOT_INITIALIZED")
    assert_error(change(api, "add", hooked, [alice]), 400, "ALLOW_LIST_NOT_INITIALIZED")

    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = False
    assert_error(api.call("post", BASE, {"itemData": {"financialInstrument": hooked, "capacity": 3}}), 400, "FUNDING_ACCOUNT_REQUIRED")
    before = chain.get_balance(Pubkey.from_string(funder_address)).value
    body = landed(api.call("post", BASE + "?wait=confirmed", {"itemData": {"financialInstrument": hooked, "capacity": 3}, "svmTransactionConfig": {"feePayer": funder}}), 201)
    assert body["initializedAllowList"]["onchainId"] == str(allow_list_address(hooked["onchainId"]))
    tx = Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"])
    rent = sum(chain.get_account_info(a).value.lamports for a in (allow_list_address(hooked["onchainId"]), validation_address(hooked["onchainId"])))
    assert tx.operation == "instruments.allow_list_initialize" and tx.effects["funding"] == {"source": funder_address, "lamports": rent, "destinationType": "MANAGED"}
    assert before - chain.get_balance(Pubkey.from_string(funder_address)).value >= rent
    platform = str(platform_fee_payer("CHAIN_LOCALNET").pubkey)
    assert platform not in {str(k) for k in from_bytes_versioned(bytes(tx.message)).account_keys}
    on_chain = decoded_from_bytes(chain, hooked["onchainId"])
    assert (on_chain["capacity"], on_chain["authority"], on_chain["owners"]) == (3, address_of(api, issuer), [])
    assert_error(api.call("post", BASE, {"itemData": {"financialInstrument": hooked}, "svmTransactionConfig": {"feePayer": funder}}), 409, "ALLOW_LIST_EXISTS")
    landed(change(api, "add", hooked, [alice]))
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    position(api, alice, hooked)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_adds_of_one_owner_record_one_transaction(api, celery_worker_process, chain, monkeypatch):
    """docs/style.md, "Locks and races": the competing add runs right after the first one built its
    transaction; the first one's write phase sees the marker and answers 409."""
    from instruments.allowlist import services as allow_services
    from transactions.responses import wait_for

    from .test_races import inject_after_build

    issuer, alice = wallet(api), wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=4)
    competing = inject_after_build(monkeypatch, allow_services, lambda: change(api, "add", hooked, [alice], wait=False))
    first = change(api, "add", hooked, [alice], wait=False)
    assert competing[0].status_code == 200, competing[0].json()
    assert_error(first, 409, "OPERATION_IN_PROGRESS", "itemData.financialInstrument")
    monkeypatch.undo()
    tx = Transaction.unscoped.get(operation="instruments.allow_list_add")
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    assert decoded_from_bytes(chain, hooked["onchainId"])["owners"] == [address_of(api, alice)]
