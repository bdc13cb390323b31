"""Tenant durable nonce accounts on the local node (docs/transactions.md, "Tenant durable
nonce accounts"): Create Durable Nonce Accounts, Fetch Durable Nonce Account(s), and their
use by DURABLE_NONCE transactions. Chain state is read back with an unmodified solana-py
client."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection
from solana.rpc.api import Client
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import AdvanceNonceAccountParams, advance_nonce_account

from accounts import nonces
from accounts.models import Account, AccountStatus, AccountType
from custody.models import ManagedKey
from conftest import assert_error, make_client
from instruments.tests.test_races import inject_after_build
from transactions import collecting, ending, fee_payers, nonce_pool, tasks
from chain import builder
from transactions.models import NonceAccount, NonceState, PlatformFeePayer, Transaction, TransactionStatus
from transactions.responses import wait_for
from transactions.tests.chainkit import SYSTEM_PROGRAM, funded, send, wait

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
NONCES = "/api/v1/durable-nonce-accounts"
TRANSFER = "/api/v1/positions/transfer-network-currency"
NONCE_RENT = 1_447_680  # rent-exempt minimum of 80 bytes
DURABLE = {"messageLifetimeStrategy": "DURABLE_NONCE"}


# --- helpers -------------------------------------------------------------------------------


def wallet(api, chain: Client | None = None, lamports: int = 0) -> dict:
    """A managed WALLET of the tenant (no transaction), funded by airdrop when asked."""
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True}})
    assert response.status_code == 201, response.json()
    ids = response.json()["newAccount"]
    if lamports:
        wait(chain, chain.request_airdrop(Pubkey.from_string(ids["onchainId"]), lamports).value)
    return ids


def watched(api, keypair: Keypair) -> dict:
    """A not-managed account of the tenant: its key is the test's."""
    item = {"managed": False, "alreadyOnchain": True, "skipBlockchainExistenceVerification": True, "onchainId": str(keypair.pubkey())}
    response = api.call("post", "/api/v1/accounts", {"itemData": item})
    assert response.status_code == 201, response.json()
    return response.json()["newAccount"]


def create(api, count: int, funder: dict | None, *, wait: bool = True, authority: dict | None = None, **svm):
    item = {"count": count, **({"nonceAuthority": authority} if authority else {})}
    config = {**({"feePayer": {"offchainId": funder["offchainId"]}} if funder else {}), **svm}
    body = {"itemData": item, **({"svmTransactionConfig": config} if config else {})}
    return api.call("post", NONCES + ("?wait=confirmed" if wait else ""), body)


def created(api, count: int, funder: dict | None, **kwargs) -> list[dict]:
    response = create(api, count, funder, **kwargs)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert all(tx["status"] in ("CONFIRMED", "FINALIZED") for tx in body["svmTransactions"]), body
    return body["newDurableNonceAccounts"]


def fetch(api, lookup: dict):
    return api.call("post", NONCES + "/single", {"itemData": {"durableNonceAccount": lookup}})


def bulk(api, level: str = "detailed", **query):
    return api.call("post", f"{NONCES}/bulk/{level}", {"itemQuery": query} if query else {})


def transfer(api, source: dict, *, wait: str | None = "confirmed", lamports: int = 1_000_000, **svm):
    """Transfer Network Currency from ``source`` to its payee (a managed wallet: no debit
    limit holds it for approval) as a DURABLE_NONCE transaction."""
    body = {"itemData": {"source": {"offchainId": source["offchainId"]}, "destination": {"offchainId": source["payee"]},
                         "value": {"lamports": lamports}}, "svmTransactionConfig": {**DURABLE, **svm}}
    return api.call("post", TRANSFER + (f"?wait={wait}" if wait else ""), body)


def onchain_nonce(chain: Client, address: str):
    """(owner, initialized, authority, stored nonce, lamports) as the chain holds them."""
    account = chain.get_account_info(Pubkey.from_string(address)).value
    data = bytes(account.data)
    return account.owner, int.from_bytes(data[4:8], "little") == 1, Pubkey(data[8:40]), Hash(data[40:72]), account.lamports


def row(lookup: dict) -> NonceAccount:
    return NonceAccount.objects.select_related("authority_key", "account", "leased_by").get(account__offchain_id=lookup["offchainId"])


def platform_payer(cluster: str = CLUSTER) -> Pubkey:
    fee_payers.platform_fee_payer(cluster)
    return Pubkey.from_string(PlatformFeePayer.objects.get(cluster=cluster).managed_key.public_key)


@pytest.fixture
def funder(api, chain):
    """The tenant's own funded wallet: it pays rent and fees (feePayer)."""
    return wallet(api, chain, 5 * 10**9)


@pytest.fixture
def source(api, chain):
    """A wallet the DURABLE_NONCE transfers send from, and the wallet they pay."""
    return {**wallet(api, chain, 2 * 10**9), "payee": wallet(api)["offchainId"]}


# --- Create Durable Nonce Accounts -----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_create_three_at_once_each_an_initialized_nonce_account_paid_by_the_funder(api, funder, chain, celery_worker_process):
    platform = platform_payer()
    platform_before = chain.get_balance(platform).value
    funder_before = chain.get_balance(Pubkey.from_string(funder["onchainId"])).value

    response = create(api, 3, funder)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == {"newDurableNonceAccounts", "svmTransactions"}
    assert len(body["newDurableNonceAccounts"]) == 3 and len(body["svmTransactions"]) == 1  # three pairs fit one transaction
    assert body["svmTransactions"][0]["status"] in ("CONFIRMED", "FINALIZED") and body["svmTransactions"][0]["success"]
    rent = chain.get_minimum_balance_for_rent_exemption(80).value
    assert rent == NONCE_RENT
    for ids in body["newDurableNonceAccounts"]:
        owner, initialized, authority, _, lamports = onchain_nonce(chain, ids["onchainId"])
        stored = row(ids)
        assert owner == SYSTEM_PROGRAM and initialized and lamports == rent
        assert str(authority) == stored.authority == stored.authority_key.public_key  # a new key the service holds
        assert stored.tenant_id == stored.account.tenant_id and stored.state == NonceState.READY
        account = Account.unscoped.get(offchain_id=ids["offchainId"])
        assert account.type == AccountType.NONCE and account.status == AccountStatus.ACTIVE and account.address == ids["onchainId"]
    assert len({row(ids).authority for ids in body["newDurableNonceAccounts"]}) == 3  # one authority key each
    # The rent and the fee came from the tenant's funder, nothing from the platform fee payer.
    assert funder_before - chain.get_balance(Pubkey.from_string(funder["onchainId"])).value >= 3 * rent
    assert chain.get_balance(platform).value == platform_before
    tx = Transaction.unscoped.get(offchain_id=body["svmTransactions"][0]["offchainId"])
    assert tx.operation == "nonces.create" and tx.effects["funding"] == {"source": funder["onchainId"], "lamports": 3 * rent, "destinationType": "MANAGED"}
    # They are accounts too (type NONCE, the spec's specialized type).
    details = api.call("post", "/api/v1/accounts/single", {"itemData": {"onchainId": body["newDurableNonceAccounts"][0]["onchainId"]}})
    assert details.status_code == 200 and details.json()["offchain"]["type"] == "NONCE" and details.json()["dataLength"] == 80


@pytest.mark.django_db(transaction=True)
def test_create_with_a_named_authority_and_more_than_one_transaction(api, funder, chain, celery_worker_process):
    authority = wallet(api)
    response = create(api, 12, funder, authority={"offchainId": authority["offchainId"]})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert len(body["newDurableNonceAccounts"]) == 12 and len(body["svmTransactions"]) > 1
    assert all(tx["status"] in ("CONFIRMED", "FINALIZED") for tx in body["svmTransactions"])
    for result in body["svmTransactions"]:
        tx = Transaction.unscoped.get(offchain_id=result["offchainId"])
        assert 1 + 64 * len(tx.required_signers) + len(bytes(tx.message)) <= builder.MAX_TRANSACTION_SIZE
    assert sum(len(Transaction.unscoped.get(offchain_id=r["offchainId"]).effects["nonceAccounts"]) for r in body["svmTransactions"]) == 12
    managed_key = Account.unscoped.get(offchain_id=authority["offchainId"]).managed_key
    for ids in body["newDurableNonceAccounts"]:
        _, initialized, onchain_authority, _, _ = onchain_nonce(chain, ids["onchainId"])
        assert initialized and str(onchain_authority) == authority["onchainId"]
        assert row(ids).authority_key_id == managed_key.pk and row(ids).authority_account.offchain_id == uuid.UUID(authority["offchainId"])


@pytest.mark.django_db(transaction=True)
def test_localnet_airdrop_funding_pays_the_rent_when_enabled(api, chain, settings, celery_worker_process):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    platform = platform_payer()
    before = chain.get_balance(platform).value
    [ids] = created(api, 1, None)
    assert onchain_nonce(chain, ids["onchainId"])[1]
    assert before - chain.get_balance(platform).value < NONCE_RENT  # the platform paid the fee only


@pytest.mark.django_db(transaction=True)
def test_a_replayed_request_creates_nothing_more(api, funder, celery_worker_process):
    rid = uuid.uuid4()
    body = {"itemData": {"count": 2}, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}
    first = api.call("post", NONCES, body, request_id=rid)
    again = api.call("post", NONCES, body, request_id=rid)
    assert first.status_code == again.status_code == 201 and again["x-idempotent-replay"] == "true"
    assert first.content == again.content
    assert NonceAccount.objects.filter(tenant__isnull=False).count() == 2 and Transaction.unscoped.filter(operation="nonces.create").count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("count", [0, -1, nonces.MAX_NONCE_ACCOUNTS_PER_REQUEST + 1])
def test_count_out_of_range_is_400_and_creates_nothing(api, funder, count):
    assert_error(create(api, count, funder), 400, "OUT_OF_RANGE", "itemData.count")
    assert not NonceAccount.objects.exists() and not Account.unscoped.filter(type=AccountType.NONCE).exists()


@pytest.mark.django_db(transaction=True)
def test_without_a_funding_account_is_400_and_changes_nothing(api, localnet_url, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = False
    platform_payer()  # the platform's own key exists before counting
    keys = ManagedKey.objects.count()
    assert_error(create(api, 2, None), 400, "FUNDING_ACCOUNT_REQUIRED", "svmTransactionConfig.feePayer")
    assert not NonceAccount.objects.exists() and not Transaction.unscoped.exists() and ManagedKey.objects.count() == keys


@pytest.mark.django_db(transaction=True)
def test_another_tenants_authority_is_like_a_missing_one(api, other_api, funder):
    theirs = wallet(other_api)
    hidden = create(api, 1, funder, authority={"offchainId": theirs["offchainId"]})
    missing = create(api, 1, funder, authority={"offchainId": str(uuid.uuid4())})
    assert_error(hidden, 404, "NOT_FOUND", "itemData.nonceAuthority")
    assert hidden.json()["errors"] == missing.json()["errors"]
    assert not NonceAccount.objects.exists()


def test_the_documented_maximum_is_the_one_the_schema_states():
    from accounts.serializers import NewDurableNonceAccountsItem

    assert NewDurableNonceAccountsItem().fields["count"].max_value == nonces.MAX_NONCE_ACCOUNTS_PER_REQUEST


# --- Fetch Durable Nonce Account(s) ----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_fetch_single_and_bulk_with_filters(api, other_api, funder, chain, celery_worker_process):
    authority = wallet(api)
    first = created(api, 2, funder)
    named = created(api, 1, funder, authority={"onchainId": authority["onchainId"]})[0]
    wallet(api)  # an account of another type is no nonce account

    single = fetch(api, {"onchainId": named["onchainId"]})
    assert single.status_code == 200, single.json()
    item = single.json()
    assert item["onchainId"] == named["onchainId"] and item["offchainId"] == named["offchainId"]
    assert item["state"] == "READY" and item["leasedBy"] is None and item["createdAt"].endswith("Z")
    assert item["authority"] == {"onchainId": authority["onchainId"], "offchainId": authority["offchainId"], "managed": True}
    assert item["nonce"] == str(onchain_nonce(chain, named["onchainId"])[3])  # as the chain holds it now
    assert item["creationTransactionId"] == str(row(named).account.creation_transaction.offchain_id)

    everything = bulk(api)
    assert everything.status_code == 200 and everything.json()["count"] == 3
    assert [i["onchainId"] for i in everything.json()["items"]] == [named["onchainId"], *[i["onchainId"] for i in reversed(first)]]  # newest first
    assert all(i["nonce"] for i in everything.json()["items"])
    by_authority = bulk(api, "compact", filter=[{"fieldName": "authorityOnchainId", "filterValues": [{"dataType": "ONCHAIN_ADDRESS_ID", "valueString": authority["onchainId"]}]}])
    assert by_authority.json() == {"count": 1, "items": [{"onchainId": named["onchainId"], "offchainId": named["offchainId"], "state": "READY", "leasedBy": None}]}
    own_keys = bulk(api, "identifiers", filter=[{"fieldName": "authorityOffchainId", "filterValues": [{"dataType": "OFFCHAIN_ID", "filterType": "IS_NULL"}]}],
                    sort=[{"fieldName": "createdAt", "sortDirection": "ASC"}])
    assert own_keys.json() == {"count": 2, "items": first}
    ready = bulk(api, "identifiers", filter=[{"fieldName": "state", "filterValues": [{"dataType": "TEXT", "valuesString": ["READY", "LEASED"]}]}], limit=1)
    assert ready.json()["count"] == 3 and len(ready.json()["items"]) == 1
    assert_error(bulk(api, filter=[{"fieldName": "type", "filterValues": [{"dataType": "TEXT", "valueString": "NONCE"}]}]), 400, "UNKNOWN_FIELD_NAME")
    assert_error(api.call("post", f"{NONCES}/bulk/everything", {}), 400, "INVALID_ENUM")

    # Another tenant sees none of them; naming one answers like a missing one.
    assert bulk(other_api).json() == {"count": 0, "items": []}
    hidden, missing = fetch(other_api, {"offchainId": named["offchainId"]}), fetch(other_api, {"offchainId": str(uuid.uuid4())})
    assert_error(hidden, 404, "NOT_FOUND", "itemData.durableNonceAccount")
    assert hidden.json()["errors"] == missing.json()["errors"]
    assert fetch(api, {"offchainId": authority["offchainId"]}).json()["errors"] == fetch(api, {"offchainId": str(uuid.uuid4())}).json()["errors"]


# --- use in DURABLE_NONCE transactions -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_durable_nonce_transfer_picks_the_tenants_own_nonce_first(api, funder, source, chain, celery_worker_process):
    [ids] = created(api, 1, funder)
    before = onchain_nonce(chain, ids["onchainId"])[3]

    response = transfer(api, source)

    assert response.status_code == 200, response.json()
    result = response.json()["svmTransaction"]
    assert result["status"] in ("CONFIRMED", "FINALIZED"), result
    tx = Transaction.unscoped.get(offchain_id=result["offchainId"])
    assert tx.lifetime == "DURABLE_NONCE" and tx.nonce_account == ids["onchainId"] and tx.blockhash == str(before)
    assert onchain_nonce(chain, ids["onchainId"])[3] != before  # the transaction advanced it
    leased = fetch(api, ids).json()
    assert leased["state"] == "LEASED" and leased["leasedBy"] == result["offchainId"]
    assert nonce_pool._free(CLUSTER).filter(pk=row(ids).pk).count() == 0  # never in the platform's pool

    # The lease ends as the pool's do: once the transaction is finalized.
    assert wait_for(tx, "finalized", timeout=40).status == TransactionStatus.FINALIZED
    assert fetch(api, ids).json()["state"] == "READY"


@pytest.mark.django_db(transaction=True)
def test_a_named_nonce_is_used_and_refused_while_leased(api, funder, source, chain, celery_worker_process):
    first, second = created(api, 2, funder)
    named = {"durableNonceAccount": {"offchainId": second["offchainId"]}}

    used = transfer(api, source, wait=None, **named)
    assert used.status_code == 200, used.json()
    tx = Transaction.unscoped.get(offchain_id=used.json()["svmTransaction"]["offchainId"])
    assert tx.nonce_account == second["onchainId"]

    again = transfer(api, source, wait=None, **named)  # its transaction is still pending
    assert_error(again, 400, "NONCE_ACCOUNT_IN_USE", "svmTransactionConfig.durableNonceAccount")
    assert Transaction.unscoped.filter(operation=tx.operation).count() == 1
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    assert row(first).leased_at is None  # untouched


@pytest.mark.django_db(transaction=True)
def test_named_nonce_refusals(api, other_api, funder, source, celery_worker_process, settings):
    [mine] = created(api, 1, funder)
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True  # the other tenant's rent
    [theirs] = created(other_api, 1, None)
    # Without DURABLE_NONCE the named account is a contradiction.
    body = {"itemData": {"source": {"offchainId": source["offchainId"]}, "destination": {"offchainId": source["payee"]}, "value": {"lamports": 1_000_000}},
            "svmTransactionConfig": {"durableNonceAccount": {"offchainId": mine["offchainId"]}}}
    assert_error(api.call("post", TRANSFER, body), 400, "CONFLICTING_FIELDS", "svmTransactionConfig.durableNonceAccount")
    # Another tenant's nonce account answers like a missing one; so does an account that is no nonce account.
    hidden = transfer(api, source, wait=None, durableNonceAccount={"offchainId": theirs["offchainId"]})
    missing = transfer(api, source, wait=None, durableNonceAccount={"offchainId": str(uuid.uuid4())})
    not_nonce = transfer(api, source, wait=None, durableNonceAccount={"offchainId": source["offchainId"]})
    assert_error(hidden, 404, "NOT_FOUND", "svmTransactionConfig.durableNonceAccount")
    assert hidden.json()["errors"] == missing.json()["errors"] == not_nonce.json()["errors"]
    # One whose creation has not confirmed yet (set back: the pump is faster than this test).
    [pending] = created(api, 1, funder)
    NonceAccount.objects.filter(account__offchain_id=pending["offchainId"]).update(state=NonceState.CREATING)
    assert_error(transfer(api, source, wait=None, durableNonceAccount=pending), 400, "NONCE_ACCOUNT_NOT_READY", "svmTransactionConfig.durableNonceAccount")
    NonceAccount.objects.filter(account__offchain_id=pending["offchainId"]).update(state=NonceState.FAILED)
    assert_error(transfer(api, source, wait=None, durableNonceAccount=pending), 400, "NONCE_ACCOUNT_NOT_READY")
    assert not Transaction.unscoped.filter(operation="positions.transfer_network_currency").exists()
    assert NonceAccount.objects.filter(leased_at__isnull=False).count() == 0


@pytest.mark.django_db(transaction=True)
def test_two_requests_naming_one_nonce_at_once_one_wins(api, api_key, funder, source, celery_worker_process, monkeypatch):
    from positions import transfers

    [ids] = created(api, 1, funder)
    named = {"durableNonceAccount": {"offchainId": ids["offchainId"]}}
    # The competitor comes exactly when the first request holds the lease, not yet bound to
    # its transaction (between its network phase and its write phase).
    competing = inject_after_build(monkeypatch, transfers, lambda: transfer(api, source, wait=None, **named))
    first = transfer(api, source, wait=None, **named)
    assert first.status_code == 200, first.json()
    assert_error(competing[0], 400, "NONCE_ACCOUNT_IN_USE")
    assert row(ids).leased_by.offchain_id == uuid.UUID(first.json()["svmTransaction"]["offchainId"])

    # Two threads at once naming a fresh account: exactly one gets it.
    pair = created(api, 1, funder)
    results: list = []
    barrier = threading.Barrier(2)

    def call():
        try:
            barrier.wait()
            results.append(transfer(make_client(api_key.secret), source, wait=None, durableNonceAccount={"offchainId": pair[0]["offchainId"]}))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(r.status_code for r in results) == [200, 400], [r.json() for r in results]
    assert [e["code"] for r in results if r.status_code == 400 for e in r.json()["errors"]] == ["NONCE_ACCOUNT_IN_USE"]
    assert Transaction.unscoped.filter(nonce_account=pair[0]["onchainId"]).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_unnamed_requests_never_share_a_nonce(api, api_key, funder, source, celery_worker_process, settings):
    settings.LEDGER_NONCE_LEASES_PER_TENANT = 0  # no platform lease at all: only the tenant's own account serves
    [ids] = created(api, 1, funder)
    results: list = []
    barrier = threading.Barrier(3)

    def call():
        try:
            barrier.wait()
            results.append(transfer(make_client(api_key.secret), source, wait=None))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 429, 429], [r.json() for r in results]  # the own lease does not count towards the pool quota
    assert Transaction.unscoped.filter(nonce_account=ids["onchainId"]).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_transaction_that_ends_unlanded_advances_the_tenants_nonce_before_releasing_it(api, funder, chain, celery_worker_process):
    [ids] = created(api, 1, funder)
    owner = funded(chain, 10**9)  # a source whose key the test holds: the transfer waits for its signature
    source = {**watched(api, owner), "payee": wallet(api)["offchainId"]}
    held = transfer(api, source, wait=None)
    assert held.status_code == 200 and held.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED", held.json()
    tx = Transaction.unscoped.get(offchain_id=held.json()["svmTransaction"]["offchainId"])
    assert tx.nonce_account == ids["onchainId"] and fetch(api, ids).json()["state"] == "LEASED"

    ending.transaction_cancel(transaction=tx)

    # Its authority key is the service's: the value the cancelled bytes were signed over is
    # spent first, then the account is free for the next transaction.
    assert str(onchain_nonce(chain, ids["onchainId"])[3]) != tx.blockhash
    assert fetch(api, ids).json()["state"] == "READY" and not tx.events.filter(kind="NONCE_LEASE_KEPT").exists()


# --- an authority the service does not hold --------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_off_platform_authority_leaves_the_transaction_partially_signed(api, funder, source, chain, celery_worker_process, monkeypatch):
    authority = Keypair()
    lookups = created(api, 2, funder, authority=watched(api, authority))
    assert all(row(ids).authority_key is None and row(ids).authority == str(authority.pubkey()) for ids in lookups)

    # Never picked unnamed: the transaction would wait for a signature nobody expects.
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    monkeypatch.setattr(nonce_pool, "_kick_fill", lambda cluster: None)  # the session's worker would fill the pool past this test
    unnamed = transfer(api, source)
    assert unnamed.status_code == 200, unnamed.json()
    assert Transaction.unscoped.get(offchain_id=unnamed.json()["svmTransaction"]["offchainId"]).nonce_account not in {i["onchainId"] for i in lookups}

    before = onchain_nonce(chain, lookups[0]["onchainId"])[3]
    held = transfer(api, source, wait=None, durableNonceAccount={"onchainId": lookups[0]["onchainId"]})
    assert held.status_code == 200, held.json()
    assert held.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED"
    tx = Transaction.unscoped.get(offchain_id=held.json()["svmTransaction"]["offchainId"])
    assert tx.missing_signers == [str(authority.pubkey())]
    # The authority signs off platform (Sign Transaction's service).
    signed = collecting.transaction_add_signatures(transaction=tx, signatures={str(authority.pubkey()): str(authority.sign_message(bytes(tx.message)))})
    assert signed.status == TransactionStatus.SIGNED
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    assert onchain_nonce(chain, lookups[0]["onchainId"])[3] != before


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_transaction_keeps_an_unadvanceable_nonce_until_it_moves(api, funder, source, chain, celery_worker_process):
    authority = Keypair()
    [ids] = created(api, 1, funder, authority=watched(api, authority))
    held = transfer(api, source, wait=None, durableNonceAccount=ids)
    tx = Transaction.unscoped.get(offchain_id=held.json()["svmTransaction"]["offchainId"])

    cancelled = ending.transaction_cancel(transaction=tx)

    # The service cannot advance the nonce, so the cancelled bytes could still execute if
    # the authority signed them: the account is not leased again until its nonce moved.
    assert cancelled.status == TransactionStatus.CANCELLED
    assert row(ids).leased_by_id == tx.pk and tx.events.filter(kind="NONCE_LEASE_KEPT").exists()
    assert fetch(api, ids).json()["state"] == "LEASED"
    assert_error(transfer(api, source, wait=None, durableNonceAccount=ids), 400, "NONCE_ACCOUNT_IN_USE")
    assert nonce_pool.clusters_with_kept_leases() == [CLUSTER]
    assert tasks.sweep_nonce_leases(cluster=CLUSTER) == 0  # the nonce has not moved

    # The authority advances it itself; the sweep the pool's beat task queues frees it.
    payer = funded(chain, 10**8)
    address = Pubkey.from_string(ids["onchainId"])
    send(chain, payer, [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=address, authorized_pubkey=authority.pubkey()))], [authority])
    assert tasks.sweep_nonce_leases(cluster=CLUSTER) == 1
    assert fetch(api, ids).json()["state"] == "READY" and nonce_pool.clusters_with_kept_leases() == []


# --- the platform's pool is left as it was ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_pool_task_never_finishes_trims_or_counts_a_tenants_accounts(api, funder, chain, celery_worker_process):
    from datetime import timedelta

    from django.utils import timezone

    ready, creating = created(api, 2, funder)
    NonceAccount.objects.filter(account__offchain_id=creating["offchainId"]).update(state=NonceState.CREATING, created_at=timezone.now() - timedelta(minutes=5))
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=0) == 0  # a tenant's CREATING row is its transaction's to finish
    nonce_pool.nonce_pool_trim(cluster=CLUSTER, keep=0)
    assert row(ready).state == NonceState.READY and row(creating).state == NonceState.CREATING
    assert onchain_nonce(chain, ready["onchainId"])[1]
    assert not nonce_pool._free(CLUSTER).filter(tenant__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_the_admin_lists_pool_and_tenant_accounts_with_their_leases(admin_client, api, funder, chain, celery_worker_process):
    [ids] = created(api, 1, funder)
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    pooled = NonceAccount.objects.filter(tenant__isnull=True).first()
    tenants = admin_client.get("/admin/transactions/nonceaccount/?owner=tenant").content.decode()
    assert ids["onchainId"] in tenants and "Acme Bank" in tenants and pooled.address not in tenants
    pool = admin_client.get("/admin/transactions/nonceaccount/?owner=pool").content.decode()
    assert pooled.address in pool and ids["onchainId"] not in pool
    assert admin_client.get(f"/admin/transactions/nonceaccount/{row(ids).pk}/change/").status_code == 200
