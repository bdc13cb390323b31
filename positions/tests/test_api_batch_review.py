"""Batch payouts under review (issue 35, part 5; docs/positions.md, "Batch payouts"): the
items held are the ones the limits decide in request order, a batch weighs its items in
the rate limit (test_api_batch_throttle.py), a failing pack is split in halves rather than simulated item by item, and
a retry in the worker acts as the key that created the batch. Every reproduction uses a
key with no roles."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

from chain.rpc import ChainRpc
from conftest import make_client
from positions import batch_bisect, batch_retries
from positions.models import Batch, BatchItem, BatchItemStatus, BatchKind
from tenancy.roles import Role
from tenancy.services import api_key_deactivate
from tenancy.tests.factories import issue_key
from transactions.models import Transaction

from .kit import instrument, position, wallet
from .test_api_batch import _wallet_with, funded_position, item, send_batch, settled_batch

pytestmark = pytest.mark.chain

NC_BATCH = "/api/v1/positions/transfer-network-currency/batch"
SOL = 10**9
DONE = ("CONFIRMED", "FINALIZED")
FIVE_MILLION_A_DAY = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]


def nc_item(source: dict, destination: dict, lamports: int) -> dict:
    return {"source": {"offchainId": source["offchainId"]}, "destination": {"offchainId": destination["offchainId"]}, "value": {"lamports": lamports}}


def statuses(body: dict) -> list[str]:
    return ["CONFIRMED" if i["status"] in DONE else i["status"] for i in sorted(body["items"], key=lambda i: i["index"])]


# --- 1. the items held are those the limits decide in request order --------------------------------


@pytest.mark.django_db(transaction=True)
def test_network_currency_items_over_a_duration_limit_are_the_later_ones(api, celery_worker_process, chain):
    """5,000,000 lamports a day, four items of 2,000,000: the first two fit (4,000,000), the
    third would make 6,000,000. The held packs were recorded first, so the first two were
    then over the window and the last two went out."""
    source, destination = _wallet_with(api, SOL, networkCurrencyDebitLimits=FIVE_MILLION_A_DAY), _wallet_with(api)
    response = api.call("post", NC_BATCH, {"itemData": {"items": [nc_item(source, destination, 2_000_000) for _ in range(4)]}})
    assert response.status_code == 200, response.json()
    final = settled_batch(api, response.json()["batch"]["offchainId"])
    assert statuses(final) == ["CONFIRMED", "CONFIRMED", "PENDING_APPROVAL", "PENDING_APPROVAL"], final
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == 4_000_000


@pytest.mark.django_db(transaction=True)
def test_token_items_over_a_duration_limit_are_the_later_ones(api, celery_worker_process, chain):
    authority, bob = wallet(api), wallet(api)
    alice = wallet(api, tokenDebitLimits=FIVE_MILLION_A_DAY)
    bond = instrument(api, authority=authority)
    a = funded_position(api, alice, bond, 10_000_000)
    b = position(api, bob, bond)
    body = send_batch(api, [item(a, b, 2_000_000) for _ in range(4)]).json()["batch"]
    final = settled_batch(api, body["offchainId"])
    assert statuses(final) == ["CONFIRMED", "CONFIRMED", "PENDING_APPROVAL", "PENDING_APPROVAL"], final


# --- 3. a failing pack is bisected, not simulated item by item ------------------------------------------


@pytest.fixture
def simulations(monkeypatch):
    """Every simulation the request asks the node for (ChainRpc.simulate)."""
    calls = []
    real = ChainRpc.simulate

    def counted(self, transaction, **kwargs):
        calls.append(len(transaction.message.instructions))
        return real(self, transaction, **kwargs)

    monkeypatch.setattr(ChainRpc, "simulate", counted)
    return calls


def _two_positions_of_one_payer(api):
    """Alice's funded position in one bond and her empty one in another: her items share
    packs (one signer), and an item from the empty one fails in simulation."""
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    bond, other = instrument(api, authority=authority), instrument(api, authority=authority)
    funded, empty = funded_position(api, alice, bond, 10_000), position(api, alice, other)
    return (funded, position(api, bob, bond)), (empty, position(api, bob, other))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("config", [None, {"computeUnitConfig": {"limit": 400_000, "price": 1}}], ids=["plain", "compute-budget-first"])
def test_few_failing_items_among_300_cost_a_few_simulations_each(api, celery_worker_process, chain, simulations, config):
    """12 failing items, one in each of 12 packs of 24 (a 13th pack all good): item by item
    that was 13 + 12 x 24 = 301 simulations; split at the failure, a few per failing item.
    With compute-budget instructions first, the failing instruction's index still names the
    right item."""
    good, bad = _two_positions_of_one_payer(api)
    items = [item(*bad, 1) if i % 25 == 12 else item(*good, 1) for i in range(300)]
    failing = [i for i in range(300) if i % 25 == 12]
    simulations.clear()
    response = api.call("post", "/api/v1/positions/transfer/batch", {"itemData": {"items": items}, **({"svmTransactionConfig": config} if config else {})})
    assert response.status_code == 200, response.json()
    body = response.json()["batch"]
    rejected = [i["index"] for i in body["items"] if i["status"] == "REJECTED"]
    assert rejected == failing and all(i["errors"][0]["code"] == "TRANSACTION_SIMULATION_FAILED" for i in body["items"] if i["status"] == "REJECTED")
    assert sum(1 for i in body["items"] if i["status"] == "SIGNED") == 288
    packs, k = 13, len(failing)
    print(f"simulations, {k} failing among 300: {len(simulations)}")
    assert len(simulations) <= packs + 3 * k, len(simulations)


@pytest.mark.django_db(transaction=True)
def test_300_failing_items_cost_no_more_than_one_simulation_each(api, celery_worker_process, chain, simulations):
    good, bad = _two_positions_of_one_payer(api)
    simulations.clear()
    body = send_batch(api, [item(*bad, 1) for _ in range(300)]).json()["batch"]
    assert body["counts"] == {"REJECTED": 300}
    print(f"simulations, 300 failing among 300: {len(simulations)}")
    assert len(simulations) <= 300, len(simulations)


@pytest.mark.django_db(transaction=True)
def test_a_failure_that_names_no_item_is_found_by_halving(api, celery_worker_process, chain, simulations, monkeypatch):
    """When the refusal does not say which instruction failed, the pack is split in halves:
    k failing items among n cost O(k log n) simulations."""
    monkeypatch.setattr(batch_bisect, "failing_item", lambda exc, items, config: None)
    good, bad = _two_positions_of_one_payer(api)
    items = [item(*bad, 1) if i % 25 == 12 else item(*good, 1) for i in range(300)]
    simulations.clear()
    body = send_batch(api, items).json()["batch"]
    assert [i["index"] for i in body["items"] if i["status"] == "REJECTED"] == [i for i in range(300) if i % 25 == 12]
    print(f"simulations by halving, 12 failing among 300: {len(simulations)}")
    assert len(simulations) <= 13 + 2 * 12 * 5, len(simulations)  # packs + 2 k ⌈log2 24⌉


# --- 4. a retry in the worker acts as the batch's key ----------------------------------------------


def _retry_again(batch: Batch) -> BatchItem:
    """The batch's one item due for a retry again (as after its packed transaction failed),
    retried as the worker does: no request, no acting key set."""
    BatchItem.objects.filter(batch=batch).update(status=BatchItemStatus.RETRY_DUE, transaction=None, errors=None, http_status=None)
    batch_retries.batch_retry(batch_pk=batch.pk)
    return BatchItem.objects.get(batch=batch)


@pytest.mark.django_db(transaction=True)
def test_a_retry_checks_a_shared_key_under_the_key_that_made_the_batch(tenant, other_tenant, celery_worker_process, chain):
    """ACME shares its account with GLOBEX but lets only its own key debit it. GLOBEX's
    batch naming it as fee payer is refused where the engine signs; the worker's retry of
    that item used to sign with it, since no acting key was set."""
    acme_key = issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS])
    acme = make_client(acme_key.secret)
    globex = make_client(issue_key(other_tenant).secret)
    shared = _wallet_with(acme, 2 * SOL, shareAcrossTenants=True, orgsAllowedToSignWithPrivateKey=["GLOBEX"], networkCurrencyDebitApiKeys=[acme_key.api_key.key_id])
    source, destination = _wallet_with(globex, SOL // 10), _wallet_with(globex)
    body = {"itemData": {"items": [nc_item(source, destination, 1_000_000)]}, "svmTransactionConfig": {"feePayer": {"onchainId": shared["onchainId"]}}}
    response = globex.call("post", NC_BATCH, body)
    assert response.status_code == 200, response.json()
    first = response.json()["batch"]["items"][0]
    assert first["status"] == "REJECTED" and first["errors"][0]["code"] == "SIGNER_NOT_ALLOWED", first
    transactions = Transaction.unscoped.count()
    row = _retry_again(Batch.unscoped.get(offchain_id=response.json()["batch"]["offchainId"]))
    assert row.status == BatchItemStatus.REJECTED and row.errors[0]["code"] == "SIGNER_NOT_ALLOWED", (row.status, row.errors)
    assert Transaction.unscoped.count() == transactions


@pytest.mark.django_db(transaction=True)
def test_a_retry_of_a_batch_whose_key_was_revoked_rejects_its_items(tenant, api_key, api, celery_worker_process, chain):
    source, destination = _wallet_with(api, SOL // 10), _wallet_with(api)
    batch = Batch.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", kind=BatchKind.NETWORK_CURRENCY_TRANSFER, created_by_key=api_key.api_key, item_count=1)
    BatchItem.objects.create(batch=batch, index=0, data=nc_item(source, destination, 1_000_000), status=BatchItemStatus.RETRY_DUE)
    api_key_deactivate(api_key=api_key.api_key)
    transactions = Transaction.unscoped.count()
    batch_retries.batch_retry(batch_pk=batch.pk)
    row = BatchItem.objects.get(batch=batch)
    assert row.status == BatchItemStatus.REJECTED and row.http_status == 401 and row.errors[0]["code"] == "API_KEY_REVOKED", (row.status, row.errors)
    assert row.errors[0]["field"] == "itemData.items[0]"
    assert Transaction.unscoped.count() == transactions


@pytest.mark.django_db(transaction=True)
def test_a_retry_runs_as_the_batchs_key(tenant, api_key, api, celery_worker_process, chain, monkeypatch):
    from positions import batch_network

    seen = []
    real = batch_network.transaction_build
    monkeypatch.setattr(batch_network, "transaction_build", lambda **kwargs: seen.append(kwargs["context"].api_key) or real(**kwargs))
    source, destination = _wallet_with(api, SOL // 10), _wallet_with(api)
    batch = Batch.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", kind=BatchKind.NETWORK_CURRENCY_TRANSFER, created_by_key=api_key.api_key, item_count=1)
    BatchItem.objects.create(batch=batch, index=0, data=nc_item(source, destination, 1_000_000), status=BatchItemStatus.RETRY_DUE)
    batch_retries.batch_retry(batch_pk=batch.pk)
    assert [k.pk for k in seen] == [api_key.api_key.pk]
    assert BatchItem.objects.get(batch=batch).status == BatchItemStatus.SENT


def test_the_builder_says_how_many_instructions_it_puts_first(localnet_url):
    """batch_bisect reads a failing instruction's index back to the batch's items by what
    the builder puts first: the two are held in step here."""
    from solders.keypair import Keypair
    from solders.system_program import TransferParams, transfer

    from chain import builder
    from chain.rpc import rpc_for

    rpc = rpc_for("CHAIN_LOCALNET")
    payer, other = Keypair(), Keypair()
    own = [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=other.pubkey(), lamports=n)) for n in (1, 2)]
    for compute in (None, builder.ComputeUnits(limit=200_000), builder.ComputeUnits(price=5), builder.ComputeUnits(limit=1, price=1), builder.ComputeUnits()):
        built = builder.build(builder.BuildPlan(instructions=own, fee_payer=payer.pubkey(), compute=compute), rpc)
        assert len(built.message.instructions) - len(own) == builder.instructions_before(nonce=False, compute=compute), compute
    assert builder.instructions_before(nonce=False, compute=builder.ComputeUnits(estimate=True)) is None
