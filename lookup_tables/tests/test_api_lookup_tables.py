"""Address lookup tables through the API on the local node (docs/lookup-tables.md): create,
extend, freeze, deactivate, close; fetch; other tenants; bad input. The chain is checked
with an unmodified solana-py client and solders' own AddressLookupTable decoder."""

from __future__ import annotations

import uuid

import pytest
from solders.address_lookup_table_account import AddressLookupTable
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from custody.models import ManagedKey
from conftest import assert_error
from positions.tests.kit import wallet
from chain.builder import ADDRESS_LOOKUP_TABLE_PROGRAM
from transactions.fee_payers import platform_fee_payer
from lookup_tables.models import AddressLookupTable as Table
from transactions.models import Transaction
from transactions.tests.chainkit import hold_pump
from lookup_tables.tests.factories import AddressLookupTableFactory

pytestmark = pytest.mark.chain
BASE = "/api/v1/address-lookup-tables"
DONE = ("CONFIRMED", "FINALIZED")


@pytest.fixture
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def raw(address) -> dict:
    """A component address the service does not know."""
    return {"onchainId": str(address), "offPlatform": True}


def create(api, item: dict | None = None, *, wait: bool = True, **envelope):
    return api.call("post", BASE + ("?wait=confirmed" if wait else ""), {"itemData": item or {}, **envelope})


def extend(api, table: dict, components: list[dict], *, wait: bool = True, **envelope):
    return api.call("patch", f"{BASE}/extend" + ("?wait=confirmed" if wait else ""), {"itemData": {"addressLookupTable": table, "componentAddresses": components}, **envelope})


def update(api, table: dict, action: str, *, wait: bool = True, **item):
    return api.call("patch", BASE + ("?wait=confirmed" if wait else ""), {"itemData": {"addressLookupTable": table, "action": action, **item}})


def details(api, table: dict):
    return api.call("post", f"{BASE}/single", {"itemData": {"addressLookupTable": table}})


def landed(response, name: str, status: int = 200) -> dict:
    """The table identifiers of a mutation answered ``status`` whose transaction confirmed."""
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    assert set(body) == {name, "svmTransactionResult"}, body
    assert body["svmTransactionResult"]["status"] in DONE, body
    return body[name]


def new_table(api, components: list[dict] = (), **item) -> dict:
    return landed(create(api, {"componentAddresses": list(components), **item}), "newAddressLookupTable", 201)


def on_chain(chain, table: dict) -> AddressLookupTable | None:
    info = chain.get_account_info(Pubkey.from_string(table["onchainId"])).value
    if info is None:
        return None
    assert info.owner == ADDRESS_LOOKUP_TABLE_PROGRAM
    return AddressLookupTable.deserialize(bytes(info.data))


def address_of(api, lookup: dict) -> str:
    return api.call("post", "/api/v1/accounts/single", {"itemData": lookup}).json()["onchain"]["id"]


def funded_wallet(api, lamports: int = 50_000_000) -> dict:
    """A managed wallet holding ``lamports`` (seeded through the API, confirmed)."""
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "seed": {"lamports": lamports}}})
    assert response.status_code == 201 and response.json()["svmTransaction"]["status"] in DONE, response.json()
    return {"offchainId": response.json()["newAccount"]["offchainId"]}


def nothing_recorded(before: tuple[int, int, int]) -> bool:
    return (Table.unscoped.count(), Transaction.unscoped.count(), ManagedKey.objects.count()) == before


def counts() -> tuple[int, int, int]:
    return Table.unscoped.count(), Transaction.unscoped.count(), ManagedKey.objects.count()


# --- create ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_create_stores_the_component_addresses_on_chain_and_rent_is_not_the_platforms(api, celery_worker_process, chain, airdrop_funding):
    owner = wallet(api)
    owner_address = address_of(api, owner)
    outsiders = [Keypair().pubkey() for _ in range(3)]
    platform = platform_fee_payer("CHAIN_LOCALNET").pubkey
    new_table(api)  # settles any localnet top-up of the platform fee payer first
    before = chain.get_balance(platform).value

    response = create(api, {"componentAddresses": [owner, *(raw(a) for a in outsiders)]})
    table = landed(response, "newAddressLookupTable", 201)

    stored = on_chain(chain, table)
    assert [str(a) for a in stored.addresses] == [owner_address, *(str(a) for a in outsiders)]
    signature = Signature.from_string(response.json()["svmTransactionResult"]["onchainId"])
    meta = chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta
    assert before - chain.get_balance(platform).value == meta.fee  # fees only: the rent came from the airdrop funder
    rent = chain.get_minimum_balance_for_rent_exemption(56 + 32 * 4).value
    assert chain.get_balance(Pubkey.from_string(table["onchainId"])).value == rent

    shown = details(api, {"offchainId": table["offchainId"]}).json()
    assert shown["state"] == "ACTIVE" and shown["addresses"] == [str(a) for a in stored.addresses] and shown["addressesCount"] == 4
    assert shown["authority"] == {"onchainId": str(stored.meta.authority), "offchainId": None}  # a key the service holds
    assert Table.unscoped.get(offchain_id=table["offchainId"]).authority_key.public_key == str(stored.meta.authority)
    assert shown["lastExtendedSlot"] == stored.meta.last_extended_slot and shown["deactivationSlot"] is None


@pytest.mark.django_db(transaction=True)
def test_an_account_of_the_tenant_can_be_the_authority_and_the_funder(api, celery_worker_process, chain, airdrop_funding):
    funder, authority = funded_wallet(api), wallet(api)
    authority_address = address_of(api, authority)
    table = landed(create(api, {"authority": authority, "componentAddresses": [raw(Keypair().pubkey())]}, svmTransactionConfig={"feePayer": funder}), "newAddressLookupTable", 201)
    assert str(on_chain(chain, table).meta.authority) == authority_address
    assert details(api, {"onchainId": table["onchainId"]}).json()["authority"] == {"onchainId": authority_address, "offchainId": authority["offchainId"]}
    tx = Transaction.unscoped.get(onchain_id=Transaction.unscoped.filter(operation="lookup_tables.create").latest("pk").onchain_id)
    assert tx.fee_payer != str(platform_fee_payer("CHAIN_LOCALNET").pubkey) and tx.effects["funding"]["lamports"] == chain.get_minimum_balance_for_rent_exemption(56 + 32).value


# --- extend ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_extend_appends_in_order_and_refuses_duplicates_and_a_full_table(api, celery_worker_process, chain, airdrop_funding):
    first, more = [Keypair().pubkey() for _ in range(2)], [Keypair().pubkey() for _ in range(3)]
    table = new_table(api, [raw(a) for a in first])
    response = extend(api, {"onchainId": table["onchainId"]}, [raw(a) for a in more])
    assert landed(response, "extendedAddressLookupTable") == table
    stored = on_chain(chain, table)
    assert [str(a) for a in stored.addresses] == [str(a) for a in first + more]
    shown = details(api, table).json()
    assert shown["addresses"] == [str(a) for a in first + more] and shown["addressesCount"] == 5
    assert shown["lastTransaction"]["onchainId"] == response.json()["svmTransactionResult"]["onchainId"]

    before, fresh = counts(), raw(Keypair().pubkey())
    assert_error(extend(api, table, [fresh, fresh]), 400, "DUPLICATE_ADDRESS", "itemData.componentAddresses[1]")
    assert_error(extend(api, table, [raw(Keypair().pubkey()), raw(first[1])]), 400, "DUPLICATE_ADDRESS", "itemData.componentAddresses[1]")
    assert_error(extend(api, table, [raw(Keypair().pubkey()) for _ in range(252)]), 400, "LOOKUP_TABLE_FULL", "itemData.componentAddresses")
    assert_error(extend(api, table, [raw(Keypair().pubkey()) for _ in range(257)]), 400, "TOO_LONG", "itemData.componentAddresses")
    too_many = assert_error(extend(api, table, [raw(Keypair().pubkey()) for _ in range(40)]), 400, "TRANSACTION_TOO_LARGE", "itemData.componentAddresses")
    assert "fit in one transaction" in too_many["errors"][0]["message"]
    assert_error(extend(api, table, []), 400, "TOO_SHORT", "itemData.componentAddresses")
    assert nothing_recorded(before) and on_chain(chain, table) == stored


@pytest.mark.django_db(transaction=True)
def test_an_off_platform_authority_signs_later_and_a_second_change_meanwhile_is_409(api, celery_worker_process, chain, airdrop_funding):
    from transactions.collecting import transaction_add_signatures

    signer = Keypair()
    authority = wallet(api, managed=False, address=str(signer.pubkey()))
    table = new_table(api, authority=authority)  # creating a table needs no signature of its authority
    added = Keypair().pubkey()
    waiting = extend(api, table, [raw(added)])
    assert waiting.status_code == 200 and waiting.json()["svmTransactionResult"]["status"] == "PARTIALLY_SIGNED", waiting.json()
    assert_error(extend(api, table, [raw(Keypair().pubkey())]), 409, "OPERATION_IN_PROGRESS", "itemData.addressLookupTable")
    assert_error(update(api, table, "DEACTIVATE"), 409, "OPERATION_IN_PROGRESS", "itemData.addressLookupTable")

    tx = Transaction.unscoped.get(offchain_id=waiting.json()["svmTransactionResult"]["offchainId"])
    transaction_add_signatures(transaction=tx, signatures={str(signer.pubkey()): str(signer.sign_message(bytes(tx.message)))})
    from tests.workers import wait_for

    wait_for(lambda: details(api, table).json()["addresses"] == [str(added)], what="the signed extension to land")
    assert [str(a) for a in on_chain(chain, table).addresses] == [str(added)]
    # The marker ended with the extension: the next change is taken (and waits for the authority too).
    assert update(api, table, "DEACTIVATE").json()["svmTransactionResult"]["status"] == "PARTIALLY_SIGNED"


# --- freeze, deactivate, close -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_frozen_table_never_changes_again(api, celery_worker_process, chain, airdrop_funding):
    empty = new_table(api)
    assert_error(update(api, empty, "FREEZE"), 400, "LOOKUP_TABLE_EMPTY", "itemData.addressLookupTable")
    table = new_table(api, [raw(Keypair().pubkey()) for _ in range(2)])
    assert landed(update(api, table, "FREEZE"), "updatedAddressLookupTable") == table
    assert on_chain(chain, table).meta.authority is None
    shown = details(api, table).json()
    assert shown["state"] == "FROZEN" and shown["authority"] is None and shown["addressesCount"] == 2
    before = counts()
    assert_error(extend(api, table, [raw(Keypair().pubkey())]), 400, "LOOKUP_TABLE_FROZEN")
    assert_error(update(api, table, "DEACTIVATE"), 400, "LOOKUP_TABLE_FROZEN")
    assert_error(update(api, table, "CLOSE", recipient=raw(Keypair().pubkey())), 400, "LOOKUP_TABLE_FROZEN")
    assert nothing_recorded(before)


@pytest.mark.django_db(transaction=True)
def test_close_is_refused_until_the_deactivation_has_cooled_down(api, celery_worker_process, chain, airdrop_funding):
    recipient = raw(Keypair().pubkey())
    table = new_table(api, [raw(Keypair().pubkey()) for _ in range(2)])
    assert_error(update(api, table, "CLOSE", recipient=recipient), 400, "LOOKUP_TABLE_NOT_DEACTIVATED")
    assert_error(update(api, table, "FREEZE", recipient=recipient), 400, "CONFLICTING_FIELDS", "itemData.recipient")
    assert landed(update(api, table, "DEACTIVATE"), "updatedAddressLookupTable") == table
    stored = on_chain(chain, table)
    assert stored.meta.deactivation_slot < 2**64 - 1
    shown = details(api, table).json()
    assert shown["state"] == "DEACTIVATED" and shown["deactivationSlot"] == stored.meta.deactivation_slot

    before = counts()
    cooling = assert_error(update(api, table, "CLOSE", recipient=recipient), 400, "LOOKUP_TABLE_COOLING_DOWN", "itemData.addressLookupTable")
    assert "slots" in cooling["errors"][0]["message"]
    assert_error(update(api, table, "DEACTIVATE"), 400, "LOOKUP_TABLE_DEACTIVATED")
    assert_error(extend(api, table, [raw(Keypair().pubkey())]), 400, "LOOKUP_TABLE_DEACTIVATED")
    assert nothing_recorded(before) and on_chain(chain, table) == stored


# --- fetch -------------------------------------------------------------------------------------


def _filter(name: str, data_type: str, **value) -> dict:
    return {"fieldName": name, "filterValues": [{"dataType": data_type, **value}]}


@pytest.mark.django_db
def test_fetch_single_and_bulk_show_the_tenants_own_tables(api, tenant, other_tenant, localnet_url):
    small = AddressLookupTableFactory(tenant=tenant, addresses=[str(Keypair().pubkey())], addresses_count=1)
    frozen = AddressLookupTableFactory(tenant=tenant, state="FROZEN", addresses=[str(Keypair().pubkey()) for _ in range(5)], addresses_count=5)
    large = AddressLookupTableFactory(tenant=tenant, addresses=[str(Keypair().pubkey()) for _ in range(9)], addresses_count=9)
    AddressLookupTableFactory(tenant=other_tenant)

    page = api.call("post", f"{BASE}/bulk/detailed", {}).json()
    assert page["count"] == 3 and [t["offchainId"] for t in page["items"]] == [str(t.offchain_id) for t in (large, frozen, small)]  # newest first
    assert page["items"][0]["addresses"] == large.addresses and page["items"][1]["authority"] is None  # frozen: no authority
    by_size = api.call("post", f"{BASE}/bulk/compact", {"itemQuery": {"filter": [_filter("state", "TEXT", valueString="ACTIVE")], "sort": [{"fieldName": "addressesCount", "sortDirection": "ASC"}]}}).json()
    assert by_size == {"count": 2, "items": [{"onchainId": t.address, "offchainId": str(t.offchain_id), "state": "ACTIVE", "addressesCount": t.addresses_count} for t in (small, large)]}
    ids = api.call("post", f"{BASE}/bulk/identifiers", {"itemQuery": {"filter": [_filter("onchainId", "ONCHAIN_ADDRESS_ID", valueString=frozen.address)]}}).json()
    assert ids == {"count": 1, "items": [{"onchainId": frozen.address, "offchainId": str(frozen.offchain_id)}]}
    assert_error(api.call("post", f"{BASE}/bulk/everything", {}), 400, "INVALID_ENUM", "detail-level")
    assert_error(api.call("post", f"{BASE}/bulk/detailed", {"itemQuery": {"sort": [{"fieldName": "addresses"}]}}), 400, "UNKNOWN_FIELD_NAME")

    assert details(api, {"onchainId": large.address}).json()["offchainId"] == str(large.offchain_id)
    assert details(api, {"onchainId": large.address, "offchainId": str(large.offchain_id)}).status_code == 200
    assert_error(details(api, {"onchainId": large.address, "offchainId": str(small.offchain_id)}), 404, "CONFLICTING_LOOKUP", "itemData.addressLookupTable")
    assert_error(details(api, {}), 400, "INVALID_LOOKUP", "itemData.addressLookupTable")


@pytest.mark.django_db
def test_another_tenants_table_answers_like_a_missing_one_and_stays_unchanged(api, other_tenant, localnet_url):
    from accounts.tests.factories import AccountFactory

    theirs = AddressLookupTableFactory(tenant=other_tenant)
    their_account = AccountFactory(tenant=other_tenant)
    before = Table.unscoped.values().get(pk=theirs.pk)
    calls = [
        lambda lk: details(api, lk),
        lambda lk: extend(api, lk, [raw(Keypair().pubkey())]),
        lambda lk: update(api, lk, "DEACTIVATE"),
    ]
    for call in calls:
        hidden, missing = call({"offchainId": str(theirs.offchain_id)}), call({"offchainId": str(uuid.uuid4())})
        assert hidden.status_code == missing.status_code == 404 and hidden.json()["errors"] == missing.json()["errors"]
        assert call({"onchainId": theirs.address}).json()["errors"] == call({"onchainId": str(Keypair().pubkey())}).json()["errors"]
    hidden = create(api, {"authority": {"offchainId": str(their_account.offchain_id)}})
    missing = create(api, {"authority": {"offchainId": str(uuid.uuid4())}})
    assert hidden.status_code == missing.status_code == 404 and hidden.json()["errors"] == missing.json()["errors"]
    assert api.call("post", f"{BASE}/bulk/identifiers", {}).json() == {"count": 0, "items": []}
    assert Table.unscoped.values().get(pk=theirs.pk) == before and Table.unscoped.count() == 1


@pytest.mark.django_db
def test_bad_input_is_refused_and_changes_nothing(api, localnet_url, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = False
    before, fresh = counts(), raw(Keypair().pubkey())
    assert_error(create(api, {}), 400, "FUNDING_ACCOUNT_REQUIRED", "svmTransactionConfig.feePayer")
    assert_error(create(api, {"componentAddresses": [{"onchainId": str(Keypair().pubkey())}]}), 404, "NOT_FOUND", "itemData.componentAddresses[0]")
    assert_error(create(api, {"componentAddresses": [fresh, fresh]}), 400, "DUPLICATE_ADDRESS", "itemData.componentAddresses[1]")
    assert_error(create(api, {"componentAddresses": [raw(Keypair().pubkey()) for _ in range(257)]}), 400, "TOO_LONG", "itemData.componentAddresses")
    assert_error(create(api, {"lookupTable": "x"}), 400, "UNKNOWN_FIELD", "itemData.lookupTable")
    assert_error(create(api, {"authority": {"onchainId": "not-an-address"}}), 400, "INVALID_ADDRESS", "itemData.authority.onchainId")
    assert_error(update(api, {"offchainId": str(uuid.uuid4())}, "DESTROY"), 400, "INVALID_ENUM", "itemData.action")
    assert_error(extend(api, {"offchainId": "nope"}, [fresh]), 400, "INVALID", "itemData.addressLookupTable.offchainId")
    assert_error(update(api, {}, "FREEZE"), 400, "INVALID_LOOKUP", "itemData.addressLookupTable")
    assert nothing_recorded(before)


@pytest.mark.django_db
def test_more_addresses_than_one_transaction_holds_is_400(api, localnet_url, airdrop_funding):
    platform_fee_payer("CHAIN_LOCALNET")  # the platform's key exists before the count
    before = counts()
    error = assert_error(create(api, {"componentAddresses": [raw(Keypair().pubkey()) for _ in range(40)]}), 400, "TRANSACTION_TOO_LARGE", "itemData.componentAddresses")
    assert "Extend Address Lookup Table" in error["errors"][0]["message"]
    assert nothing_recorded(before)


@pytest.mark.django_db
def test_admin_lists_lookup_tables_read_only(admin_client, tenant):
    table = AddressLookupTableFactory(tenant=tenant, state="FROZEN")
    listing = admin_client.get("/admin/lookup_tables/addresslookuptable/?state__exact=FROZEN").content.decode()
    assert table.address in listing
    assert table.address in admin_client.get(f"/admin/lookup_tables/addresslookuptable/?q={table.authority}").content.decode()
    page = admin_client.get(f"/admin/lookup_tables/addresslookuptable/{table.pk}/change/").content.decode()
    assert table.addresses[0] in page and 'name="state"' not in page and 'name="addresses"' not in page
    assert admin_client.get("/admin/lookup_tables/addresslookuptable/add/").status_code == 403


# --- close after the cool-down: a node of its own, warped ----------------------------------------

WARPED = "CHAIN_WARPED"  # a cluster of this test only: no worker pumps it, the test does


@pytest.fixture
def warped_node(request, tmp_path, settings):
    """A local node of this test (warping the shared one would expire every other test's
    in-flight transactions), as cluster WARPED; the test holds its pump lease and pumps it.
    Indirect parametrization passes the node's extra arguments."""
    from transactions import pump
    from chain import builder
    from chain.rpc import rpc_for
    from localnet.testing import LocalnetProcess

    node = LocalnetProcess(tmp_path / "node", extra_args=getattr(request, "param", ())).start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, WARPED: node.url}
    # The test holds the leases for as long as it runs: renewed by each step, they must not
    # lapse while one step waits for a busy machine (a lapsed lease lets a worker's pump in).
    settings.LEDGER_PUMP_LEASE_SECONDS = 300
    from tests.workers import wait_for

    # A pump the worker started for WARPED in an earlier test (its lease lapsed) may still hold it.
    wait_for(lambda: hold_pump(WARPED, "warped-test"), timeout=30, what="the pump leases")
    try:
        yield node
    finally:
        pump.lease_release(WARPED, "warped-test")
        builder.forget_blockhash(rpc_for(WARPED))
        node.stop()


def _airdrop(url: str, address: str, lamports: int) -> None:
    from tests.workers import wait_for
    from localnet.testing import rpc_call

    rpc_call(url, "requestAirdrop", [address, lamports])
    wait_for(lambda: rpc_call(url, "getBalance", [address, {"commitment": "confirmed"}])["result"]["value"] >= lamports, what="the airdrop")


def _settled(response, name: str, status: int = 200) -> dict:
    """Pump WARPED in this process until the mutation's transaction confirmed and its effects applied."""
    from tests.workers import wait_for
    from transactions import pump

    assert response.status_code == status, response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransactionResult"]["offchainId"])

    def done():
        assert hold_pump(WARPED, "warped-test")  # renewed: a lapsed lease would let the worker's pump in
        pump.pump_pass(WARPED)
        tx.refresh_from_db()
        return tx.status in DONE and tx.effects_applied_at is not None

    wait_for(done, timeout=30, what=f"{tx.operation} to confirm")
    return response.json()[name]


@pytest.mark.django_db(transaction=True)
def test_close_is_accepted_once_the_cool_down_is_over(api, warped_node):
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    from localnet.testing import rpc_call

    chain = Client(warped_node.url, commitment=Confirmed)
    on = f"?svmCluster={WARPED}"
    _airdrop(warped_node.url, str(platform_fee_payer(WARPED).pubkey), 10**10)
    funder = api.call("post", f"/api/v1/accounts{on}", {"itemData": {"managed": True}}).json()["newAccount"]
    _airdrop(warped_node.url, funder["onchainId"], 10**9)
    by_funder = {"feePayer": {"offchainId": funder["offchainId"]}}  # not the local cluster: rent needs a funder

    created = api.call("post", BASE + on, {"itemData": {"componentAddresses": [raw(Keypair().pubkey()) for _ in range(3)]}, "svmTransactionConfig": by_funder})
    table = _settled(created, "newAddressLookupTable", 201)
    rent = chain.get_balance(Pubkey.from_string(table["onchainId"])).value
    _settled(api.call("patch", BASE + on, {"itemData": {"addressLookupTable": table, "action": "DEACTIVATE"}}), "updatedAddressLookupTable")
    close = {"itemData": {"addressLookupTable": table, "action": "CLOSE", "recipient": {"offchainId": funder["offchainId"]}}}
    assert_error(api.call("patch", BASE + on, close), 400, "LOOKUP_TABLE_COOLING_DOWN")

    assert rpc_call(warped_node.url, "localnetWarpSlots", [0])["error"]["code"] == -32602
    slot = rpc_call(warped_node.url, "getSlot")["result"]
    assert rpc_call(warped_node.url, "localnetWarpSlots", [520])["result"] >= slot + 520  # past the 512 slots SlotHashes keeps
    no_recipient = {"itemData": {"addressLookupTable": table, "action": "CLOSE"}}
    assert_error(api.call("patch", BASE + on, no_recipient), 400, "RECIPIENT_REQUIRED", "itemData.recipient")  # the authority is a key the service holds
    before = chain.get_balance(Pubkey.from_string(funder["onchainId"])).value
    assert _settled(api.call("patch", BASE + on, close), "updatedAddressLookupTable") == table

    assert chain.get_account_info(Pubkey.from_string(table["onchainId"])).value is None
    assert chain.get_balance(Pubkey.from_string(funder["onchainId"])).value - before == rent  # the platform fee payer paid the fee
    shown = api.call("post", f"{BASE}/single{on}", {"itemData": {"addressLookupTable": table}}).json()
    assert shown["state"] == "CLOSED" and shown["closedAt"] is not None
    assert_error(api.call("patch", BASE + on, close), 400, "LOOKUP_TABLE_CLOSED")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("warped_node", [("--slot-seconds", "5")], indirect=True)  # the root stays at 0 for 160 s
def test_a_young_chain_gives_one_authoritys_tables_distinct_slots(api, warped_node):
    """Before the node has FINALIZED_DEPTH slots the finalized slot is 0: an authority's second
    table takes a later confirmed slot instead of colliding with the first (409)."""
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed, Finalized

    from tests.workers import wait_for

    chain = Client(warped_node.url, commitment=Confirmed)
    on = f"?svmCluster={WARPED}"
    _airdrop(warped_node.url, str(platform_fee_payer(WARPED).pubkey), 10**10)
    funder = api.call("post", f"/api/v1/accounts{on}", {"itemData": {"managed": True}}).json()["newAccount"]
    _airdrop(warped_node.url, funder["onchainId"], 10**9)
    wait_for(lambda: chain.get_slot(Confirmed).value >= 2, timeout=30, what="two slots")
    assert chain.get_slot(Finalized).value == 0
    body = {"itemData": {"authority": {"offchainId": funder["offchainId"]}}, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}
    first = _settled(api.call("post", BASE + on, body), "newAddressLookupTable", 201)
    second = _settled(api.call("post", BASE + on, body), "newAddressLookupTable", 201)
    assert first["onchainId"] != second["onchainId"]
    for table in (first, second):
        assert chain.get_account_info(Pubkey.from_string(table["onchainId"])).value.owner == Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")
