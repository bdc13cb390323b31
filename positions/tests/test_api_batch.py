"""Batch payouts (docs/positions.md, "Batch payouts"): many transfers in one request, packed
into few transactions, each item with its own result, on the local node with a real worker."""

from __future__ import annotations

import time
import uuid

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import TransferCheckedParams, transfer_checked

from positions import batches, operations
from positions.models import Batch, BatchItem
from transactions.models import Transaction
from transactions.tests.chainkit import funded, send, wallet as _wallet_with  # seeded; .kit.wallet is not

from .kit import instrument, position, wallet
from .movekit import at, balance, mint, settled

pytestmark = pytest.mark.chain

URL = "/api/v1/positions/transfer/batch"
_DONE = {"REJECTED", "CONFIRMED", "FINALIZED", "FAILED", "EXPIRED", "CANCELLED", "PENDING_APPROVAL"}


def item(source: dict, destination: dict, lamports: int) -> dict:
    return {"source": at(source), "destination": at(destination), "value": {"lamports": lamports}}


def send_batch(api, items: list, request_id=None):
    return api.call("post", URL, {"itemData": {"items": items}}, request_id=request_id)


def settled_batch(api, offchain_id: str, timeout: float = 40) -> dict:
    """The batch once every item has reached a status it stays in."""
    deadline = time.monotonic() + timeout
    while True:
        response = api.call("post", "/api/v1/positions/batches/single", {"itemData": {"batch": {"offchainId": offchain_id}}})
        assert response.status_code == 200, response.json()
        body = response.json()["batch"]
        if all(i["status"] in _DONE for i in body["items"]) or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def funded_position(api, owner: dict, bond: dict, lamports: int) -> dict:
    pos = position(api, owner, bond)
    settled(mint(api, at(pos), {"lamports": lamports}))
    return pos


@pytest.mark.django_db(transaction=True)
def test_batch_packs_shared_signers_and_rejects_bad_items_alone(api, celery_worker_process, chain):
    authority, alice, bob, carol = wallet(api), wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    a = funded_position(api, alice, bond, 10_000)
    b, c = position(api, bob, bond), position(api, carol, bond)
    good = [item(a, b if i % 2 else c, 10 + i) for i in range(30)]
    items = [
        *good[:10],
        item(a, {"offchainId": str(uuid.uuid4())}, 1),  # 10: no such position → 404 of its own
        {"source": at(a), "destination": at(b)},  # 11: no value → 400 naming its field
        item(a, a, 1),  # 12: same position
        *good[10:],
    ]
    request_id = uuid.uuid4()
    response = send_batch(api, items, request_id=request_id)
    assert response.status_code == 200, response.json()
    body = response.json()["batch"]
    assert body["itemCount"] == 33 and body["counts"]["REJECTED"] == 3
    by_index = {i["index"]: i for i in body["items"]}
    assert by_index[10]["httpStatus"] == 404 and by_index[10]["errors"][0]["field"].startswith("itemData.items[10].destination")
    assert by_index[11]["httpStatus"] == 400 and by_index[11]["errors"][0]["field"] == "itemData.items[11].value"
    assert by_index[12]["errors"][0]["code"] == "SAME_POSITION" and by_index[12]["svmTransaction"] is None
    sent = [i for i in body["items"] if i["status"] != "REJECTED"]
    carriers = {i["svmTransaction"]["offchainId"] for i in sent}
    assert len(sent) == 30 and len(carriers) < 10  # one signer: packed, several items to a transaction
    assert all(i["destination"]["offchainId"] in (b["offchainId"], c["offchainId"]) for i in sent)

    # The same x-request-id: the same answer, nothing new recorded.
    count = Transaction.unscoped.count()
    again = send_batch(api, items, request_id=request_id)
    assert again.status_code == 200 and again["x-idempotent-replay"] == "true" and again.json() == response.json()
    assert Transaction.unscoped.count() == count and Batch.unscoped.count() == 1

    final = settled_batch(api, body["offchainId"])
    assert final["counts"].get("REJECTED") == 3 and sum(v for k, v in final["counts"].items() if k in ("CONFIRMED", "FINALIZED")) == 30, final["counts"]
    moved = sum(10 + i for i in range(30))
    assert balance(chain, a["onchainId"]) == 10_000 - moved
    assert balance(chain, b["onchainId"]) + balance(chain, c["onchainId"]) == moved
    tx = Transaction.unscoped.get(offchain_id=sent[0]["svmTransaction"]["offchainId"])
    assert tx.operation == operations.TRANSFER_BATCH and len(tx.effects["batch"]["items"]) == len(tx.effects["movement"]["legs"]) > 1
    assert len(tx.effects["debits"]) == len(tx.effects["batch"]["items"])  # debit windows count every item


@pytest.mark.django_db(transaction=True)
def test_batch_item_over_its_limit_is_held_alone_and_the_others_confirm(api, celery_worker_process, chain):
    authority, alice, bob = wallet(api), wallet(api), wallet(api)
    watched = wallet(api, managed=False, address=str(Keypair().pubkey()))
    bond = instrument(api, authority=authority, decimals=2)  # default: one token (100) per transfer to a NON_MANAGED owner
    a = funded_position(api, alice, bond, 10_000)
    b = position(api, bob, bond)
    w = position(api, watched, bond)
    items = [item(a, b, 500), item(a, w, 101), item(a, b, 600), item(a, w, 100)]
    body = send_batch(api, items).json()["batch"]
    held = body["items"][1]
    assert held["status"] == "PENDING_APPROVAL" and held["svmTransaction"]["onchainId"] is None and "PER_TRANSACTION" in held["svmTransaction"]["errorMessage"]
    others = {i["svmTransaction"]["offchainId"] for i in body["items"] if i["index"] != 1}
    assert held["svmTransaction"]["offchainId"] not in others
    final = settled_batch(api, body["offchainId"])
    assert [i["status"] for i in final["items"]].count("PENDING_APPROVAL") == 1
    assert balance(chain, a["onchainId"]) == 10_000 - 1_200 and balance(chain, w["onchainId"]) == 100


@pytest.mark.django_db(transaction=True)
def test_packed_transaction_that_fails_on_chain_retries_its_items_alone(api, celery_worker_process, chain, monkeypatch):
    """Between the simulation and the send, the source loses most of its tokens: the packed
    transaction fails, each item is built again alone, and only the one that no longer fits
    fails, saying why."""
    alice_key = Keypair()
    authority, alice, bob = wallet(api), wallet(api, alice_key), wallet(api)
    bond = instrument(api, authority=authority)
    a = funded_position(api, alice, bond, 1_000)
    b = position(api, bob, bond)
    payer = funded(chain)
    drain = position(api, wallet(api), bond)
    real_write = batches._write

    def drained_first(ctx, batch, packs):
        if not batch.items.exists() and len(packs) == 1 and len(packs[0].items) == 3:
            mint_key = Pubkey.from_string(bond["onchainId"])
            send(chain, payer, [transfer_checked(TransferCheckedParams(
                program_id=TOKEN_PROGRAM_ID, source=Pubkey.from_string(a["onchainId"]), mint=mint_key, dest=Pubkey.from_string(drain["onchainId"]),
                owner=alice_key.pubkey(), amount=900, decimals=2, signers=[],
            ))], [alice_key])
        return real_write(ctx, batch, packs)

    monkeypatch.setattr(batches, "_write", drained_first)
    body = send_batch(api, [item(a, b, 30), item(a, b, 500), item(a, b, 40)]).json()["batch"]
    assert len({i["svmTransaction"]["offchainId"] for i in body["items"]}) == 1  # packed, simulated while the tokens were there
    final = settled_batch(api, body["offchainId"], timeout=60)
    statuses = {i["index"]: i for i in final["items"]}
    assert statuses[0]["status"] in ("CONFIRMED", "FINALIZED") and statuses[2]["status"] in ("CONFIRMED", "FINALIZED"), final
    assert statuses[1]["status"] == "REJECTED" and "insufficient funds" in statuses[1]["errors"][0]["message"], statuses[1]
    assert statuses[0]["firstTransaction"] == body["items"][0]["svmTransaction"]["offchainId"]
    assert Transaction.unscoped.get(offchain_id=body["items"][0]["svmTransaction"]["offchainId"]).status == "FAILED"
    assert balance(chain, a["onchainId"]) == 100 - 70 and balance(chain, b["onchainId"]) == 70
    assert BatchItem.objects.filter(status="RETRY_DUE").count() == 0


@pytest.mark.django_db
def test_batch_of_another_organization_is_like_a_missing_one(api, other_tenant):
    theirs = Batch.unscoped.create(tenant=other_tenant, cluster="CHAIN_LOCALNET", kind="TRANSFER", item_count=0)
    for offchain_id in (theirs.offchain_id, uuid.uuid4()):
        response = api.call("post", "/api/v1/positions/batches/single", {"itemData": {"batch": {"offchainId": str(offchain_id)}}})
        assert response.status_code == 404 and response.json()["errors"][0]["code"] == "BATCH_NOT_FOUND"


@pytest.mark.django_db(transaction=True)
def test_network_currency_batch_counts_earlier_items_in_the_rent_guard(api, celery_worker_process, chain):
    rent = 890_880
    alice = _wallet_with(api, 2 * 10**9)
    bob, carol, dave = _wallet_with(api), _wallet_with(api), _wallet_with(api)
    outsider = {"onchainId": str(Keypair().pubkey()), "offPlatform": True}

    def nc(destination, lamports):
        return {"source": {"offchainId": alice["offchainId"]}, "destination": {"offchainId": destination["offchainId"]} if "offPlatform" not in destination else destination, "value": {"lamports": lamports}}

    items = [nc(bob, rent), nc(bob, 1000), nc(carol, rent), nc(dave, 1), nc(bob, 10**10), nc(outsider, rent), nc(carol, 500), nc(bob, 2000)]
    response = api.call("post", "/api/v1/positions/transfer-network-currency/batch", {"itemData": {"items": items}})
    assert response.status_code == 200, response.json()
    body = response.json()["batch"]
    by_index = {i["index"]: i for i in body["items"]}
    assert by_index[3]["errors"][0]["code"] == "DESTINATION_BELOW_RENT" and by_index[4]["errors"][0]["code"] == "INSUFFICIENT_FUNDS"
    assert by_index[5]["status"] == "PENDING_APPROVAL" and by_index[5]["destination"]["onchainId"] == outsider["onchainId"]
    sent = [by_index[i] for i in (0, 1, 2, 6, 7)]
    assert len({i["svmTransaction"]["offchainId"] for i in sent}) == 1  # one source: one transaction
    final = settled_batch(api, body["offchainId"])
    assert all(final["items"][i]["status"] in ("CONFIRMED", "FINALIZED") for i in (0, 1, 2, 6, 7)), final["counts"]
    lamports = {k: chain.get_balance(Pubkey.from_string(v["onchainId"])).value for k, v in (("bob", bob), ("carol", carol), ("dave", dave))}
    assert lamports == {"bob": rent + 3000, "carol": rent + 500, "dave": 0}


@pytest.mark.django_db
def test_webhooks_fire_per_batch_item(tenant):
    """A transaction carrying several items of a batch: one event per item, each naming its
    item, as a transfer of its own would have had (docs/webhooks.md)."""
    import json as jsonlib

    from webhooks import outbox
    from webhooks.models import WebhookEvent, WebhookEventType
    from webhooks.services import webhook_create

    webhook_create(tenant=tenant, cluster="CHAIN_LOCALNET", data={"name": "payroll", "endpointUrl": "https://hooks.example/payroll", "eventTypes": ["transaction.pre_submit"]})
    packed = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation=operations.TRANSFER_BATCH, status="SIGNED", effects={"batch": {"offchainId": "b-1", "items": [3, 5]}})
    single = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="positions.transfer", status="SIGNED", effects={})
    assert outbox.transaction_events([packed, single], WebhookEventType.PRE_SUBMIT) == 3
    bodies = {e.subject: jsonlib.loads(e.body)["data"] for e in WebhookEvent.unscoped.all()}
    assert bodies[f"transaction:{packed.offchain_id}:item:3"]["batchItem"] == {"batch": "b-1", "index": 3}
    assert bodies[f"transaction:{packed.offchain_id}:item:5"]["transaction"]["offchainId"] == str(packed.offchain_id)
    assert "batchItem" not in bodies[f"transaction:{single.offchain_id}"]


@pytest.mark.django_db(transaction=True)
def test_items_of_several_payers_share_a_transaction(api, celery_worker_process, chain):
    """Payers the service signs for share transactions (each signs its own items), up to
    MAX_SIGNERS_PER_TRANSACTION of them; a fifth payer's items go to another one."""
    authority, bob = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    payers = [funded_position(api, wallet(api), bond, 1_000) for _ in range(batches.MAX_SIGNERS_PER_TRANSACTION + 1)]
    b = position(api, bob, bond)
    items = [item(payer, b, 1 + i) for payer in payers for i in range(3)]
    body = send_batch(api, items).json()["batch"]
    carriers = [i["svmTransaction"]["offchainId"] for i in body["items"]]
    assert len(set(carriers)) == 2 and carriers.count(carriers[0]) == 3 * batches.MAX_SIGNERS_PER_TRANSACTION
    packed = Transaction.unscoped.get(offchain_id=carriers[0])
    assert len(packed.required_signers) == 1 + batches.MAX_SIGNERS_PER_TRANSACTION  # the fee payer and each payer
    final = settled_batch(api, body["offchainId"])
    assert all(i["status"] in ("CONFIRMED", "FINALIZED") for i in final["items"]), final["counts"]
    assert balance(chain, b["onchainId"]) == len(payers) * 6 and all(balance(chain, p["onchainId"]) == 994 for p in payers)


@pytest.mark.django_db(transaction=True)
def test_a_batch_with_numeric_amounts_and_lookups_by_offchain_id_is_answered_item_by_item(api):
    """schemathesis: a numeric amount (parsed as Decimal) and an svmTransactionConfig lookup by
    offchainId (a UUID once validated) were stored as they came, which JSON cannot hold: 500.
    Each item is now answered on its own, and nothing is half-written."""
    body = {
        "itemData": {"items": [
            {"source": {"onchainId": "F75tu2yhYSX5vDEa78hKX8fivjbyPjDZRKrg2gRctBUr"}, "destination": {"onchainId": "FUD6h6wq4xCVvkvL1fQg5EqqNY6aFymDtbgiznfRvfFE"}, "value": {"amount": 1.5}},
            {"source": {"offchainId": "cfafcada-f59e-1de3-8c8d-2778df0f42ad"}, "destination": {"onchainId": "14Sugfag9pGFUQypjzfSHnWzLNcQyipF1baYDdNzL1p3"}, "value": {"amount": ".9"}},
        ]},
        "svmTransactionConfig": {"feePayer": {"offchainId": "e3e70682-c209-1cac-a29f-6fbed82c07cd"}},
    }
    response = api.call("post", "/api/v1/positions/transfer-network-currency/batch", body)
    assert response.status_code == 200, response.content[:500]
    items = response.json()["batch"]["items"]
    assert [i["status"] for i in items] == ["REJECTED", "REJECTED"] and all(i["errors"] for i in items), items
