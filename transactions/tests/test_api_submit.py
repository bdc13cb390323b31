"""Submit Transaction (PATCH /api/v1/transactions/submit) on the local node: signatures
collected with submitTxnIfAllSignaturesCollected false are held until it, and every other
status is refused with its exact code, the database unchanged (docs/transactions.md, "Sign
Transaction and Submit Transaction")."""

from __future__ import annotations

import time

import pytest
from solders.pubkey import Pubkey
from solders.signature import Signature

from conftest import assert_error
from positions.tests.test_api_transfer_network_currency import account, off_platform, transfer
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.responses import wait_for
from transactions.tests.chainkit import funded
from transactions.tests.test_api_sign import (  # noqa: F401  (localnet_airdrop_funding: an autouse fixture)
    AMOUNT, CLUSTER, LANDED, SOL, held_transfer, landed_on_chain, localnet_airdrop_funding, message_of, sign, signed_by, stored,
)

pytestmark = pytest.mark.chain
SUBMIT = "/api/v1/transactions/submit"


def submit(client, held: dict, *, wait: str | None = None, request_id=None):
    return client.call("patch", SUBMIT + (f"?wait={wait}" if wait else ""), {"itemData": {"transaction": {"offchainId": held["offchainId"]}}}, request_id=request_id)


@pytest.mark.django_db(transaction=True)
def test_signatures_collected_without_submitting_wait_for_submit_transaction(api, celery_worker_process, chain):
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    collected = sign(api, held, off=[signed_by(owner, held)], submitTxnIfAllSignaturesCollected=False, wait="confirmed")
    assert collected.status_code == 200 and collected.json()["status"] == "SIGNED", collected.json()  # ?wait= returns: held, not queued
    time.sleep(1.0)  # what the pump would have sent by now, it has not: the node has never seen it
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).status == "SIGNED"
    assert chain.get_signature_statuses([Signature.from_string(held["onchainId"])]).value == [None]
    # Signed already: Sign Transaction refuses and points at Submit Transaction.
    body = assert_error(sign(api, held, off=[signed_by(owner, held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "Submit Transaction" in body["errors"][0]["message"]

    first = submit(api, held, request_id="1f6c2a7e-9d3b-4c1a-8e5f-2b7d9c0a4e11")
    assert first.status_code == 200 and first.json()["status"] == "SIGNED" and first.json()["onchainId"] == held["onchainId"], first.json()
    replay = submit(api, held, request_id="1f6c2a7e-9d3b-4c1a-8e5f-2b7d9c0a4e11")
    assert replay.status_code == 200 and replay.content == first.content and replay["x-idempotent-replay"] == "true"
    # A new request (another x-request-id): it was submitted already.
    assert_error(submit(api, held, wait="confirmed"), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert wait_for(Transaction.unscoped.get(offchain_id=held["offchainId"]), "confirmed").status in LANDED
    landed_on_chain(chain, held["onchainId"], message_of(held), [owner])
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == AMOUNT
    before = stored(held)
    body = assert_error(submit(api, held), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "submitted already" in body["errors"][0]["message"]
    assert stored(held) == before


@pytest.mark.django_db(transaction=True)
def test_submit_refuses_what_it_cannot_send_and_changes_nothing(api, other_api, celery_worker_process, chain):
    owner = funded(chain, SOL)
    partial = held_transfer(api, owner)
    before = stored(partial)
    body = assert_error(submit(api, partial), 400, "SIGNATURES_MISSING", "itemData.transaction")
    assert str(owner.pubkey()) in body["errors"][0]["message"]  # the missing signer is named
    assert stored(partial) == before

    pending = transfer(api, account(api, SOL), off_platform(), {"lamports": AMOUNT}, wait=False).json()["svmTransaction"]
    assert pending["status"] == "PENDING_APPROVAL"
    before = stored(pending)
    assert_error(submit(api, pending), 400, "APPROVAL_REQUIRED", "itemData.transaction")
    assert stored(pending) == before

    # Signed and held past its blockhash: it can never execute.
    late_owner = funded(chain, SOL)
    late = held_transfer(api, late_owner)
    assert sign(api, late, off=[signed_by(late_owner, late)], submitTxnIfAllSignaturesCollected=False).json()["status"] == "SIGNED"
    Transaction.unscoped.filter(offchain_id=late["offchainId"]).update(last_valid_block_height=rpc_for(CLUSTER).block_height() - 1)
    before = stored(late)
    assert_error(submit(api, late), 400, "TRANSACTION_EXPIRED", "itemData.transaction")
    assert stored(late) == before

    # Unknown transactions and another organization's answer alike.
    unknown = {"offchainId": "3c9e7d21-0b4a-4f6e-8a2d-9e1c5b7f3a08"}
    missing = assert_error(submit(api, unknown), 404, "NOT_FOUND", "itemData.transaction")
    theirs = held_transfer(other_api, funded(chain, SOL))
    hidden = assert_error(submit(api, theirs), 404, "NOT_FOUND", "itemData.transaction")
    assert hidden["errors"] == missing["errors"]
