"""Webhook events from the engine on the local node, delivered by real workers to a real
local receiver (docs/webhooks.md): a transfer through the API raises pre_submit, then
post_submit SUBMITTED and CONFIRMED, in that order, for a registry webhook and for the
instrument's own webhook; a transfer made directly on the node with solders (not through
the API) raises account.network_event for a subscribed account within the documented
latency (the poll interval of the beat, plus delivery)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from solders.keypair import Keypair
from solders.system_program import TransferParams, transfer as transfer_lamports

from conftest import LOCAL_WEBHOOK_ENV, make_client
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, transfer
from tenancy.tests.factories import issue_key
from tests.workers import WorkerProcess, new_queue_name, paused_workers, route_tasks_to, wait_for
from webhooks.models import NetworkEventCursor
from transactions.tests.chainkit import funded, send
from webhooks.tests.webhookkit import Receiver, verify_signature

pytestmark = [pytest.mark.chain, pytest.mark.worker]

#: docs/webhooks.md, "Network events": an event reaches its endpoint within the poll
#: interval (LEDGER_NETWORK_EVENTS_POLL_SECONDS, default 2 s) plus 2 s.
POLL_SECONDS = 2.0
NETWORK_EVENT_LATENCY = POLL_SECONDS + 2.0


@pytest.fixture(autouse=True)
def local_endpoints(settings):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def _secret(tenant, offchain_id: str) -> str:
    sensitive = make_client(issue_key(tenant, roles=["PLATFORM_SENSITIVE_DATA_ACCESS"]).secret)
    return sensitive.call("post", "/api/v1/webhooks/single/signing-secret", {"itemData": {"offchainId": offchain_id}}).json()["signingSecret"]


def _of(receiver: Receiver, path: str, tx_offchain_id: str) -> list:
    return [r for r in receiver.delivered() if r.path == path and r.json["data"].get("transaction", {}).get("offchainId") == tx_offchain_id]


@pytest.mark.django_db(transaction=True)
def test_a_transfer_raises_pre_submit_then_post_submit_events_for_registry_and_instrument_webhooks(api, tenant, celery_worker_process):
    with Receiver() as receiver:
        registry = api.call("post", "/api/v1/webhooks", {"itemData": {"name": "all", "endpointUrl": receiver.url("/registry"),
                                                                       "eventTypes": ["transaction.pre_submit", "transaction.post_submit"]}})
        assert registry.status_code == 201, registry.json()
        authority, sender, receiving = wallet(api), wallet(api), wallet(api)
        bond = instrument(api, authority=authority)
        hooks = [{"name": "bond-desk", "endpointUrl": receiver.url("/instrument"), "apiKeyAuthConfig": {"httpHeaderName": "X-Desk-Key", "keyValue": "desk-secret"}}]
        assert api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": bond, "postTransactionSubmitWebhooks": hooks}}).status_code == 200
        source, destination = position(api, sender, bond), position(api, receiving, bond)
        settled(mint(api, at(source), {"lamports": 1_000}))
        body = settled(transfer(api, at(source), at(destination), {"lamports": 250}))
        tx_id = body["svmTransaction"]["offchainId"]
        for path in ("/registry", "/instrument"):
            wait_for(lambda: len(_of(receiver, path, tx_id)) == 3, timeout=30, what=f"three events of the transfer at {path}")
    instrument_hook = api.call("post", "/api/v1/webhooks/bulk/detailed", {"itemQuery": {"filter": [{"fieldName": "source", "filterValues": [{"dataType": "TEXT", "valueString": "FINANCIAL_INSTRUMENT"}]}]}}).json()["items"][0]
    for path, offchain_id in (("/registry", registry.json()["newWebhook"]["offchainId"]), ("/instrument", instrument_hook["offchainId"])):
        events = _of(receiver, path, tx_id)
        assert [(e.json["type"], e.json["data"]["transaction"]["status"]) for e in events] == [
            ("transaction.pre_submit", "SIGNED"), ("transaction.post_submit", "SUBMITTED"), ("transaction.post_submit", "CONFIRMED")]
        assert len({e.event_id for e in events}) == 3 and events[-1].json["data"]["slot"] is not None
        secret = _secret(tenant, offchain_id)
        assert all(verify_signature(secret, e.headers, e.body) for e in events)
    assert {e.headers["x-desk-key"] for e in _of(receiver, "/instrument", tx_id)} == {"desk-secret"}
    # Same event, same id, at both endpoints.
    assert [e.event_id for e in _of(receiver, "/registry", tx_id)] == [e.event_id for e in _of(receiver, "/instrument", tx_id)]
    # The instrument's webhook hears only transactions naming its mint: not the wallets' creations.
    assert all(r.json["data"]["operation"] != "accounts.create" for r in receiver.delivered() if r.path == "/instrument")


@pytest.mark.django_db(transaction=True)
def test_a_transfer_made_directly_on_the_node_raises_a_network_event_within_the_poll_latency(api, tenant, chain, localnet_url, tmp_path: Path):
    from ledger_project.celery import app

    owner = Keypair()
    account = wallet(api, managed=False, address=str(owner.pubkey()), subscribeToNetworkEvents=True)
    with Receiver() as receiver, paused_workers():
        created = api.call("post", "/api/v1/webhooks", {"itemData": {"name": "accounts", "endpointUrl": receiver.url("/accounts"), "eventTypes": ["account.network_event"]}})
        assert created.status_code == 201, created.json()
        previous_queue = app.conf.task_default_queue
        queue = new_queue_name()
        route_tasks_to(queue)
        worker = WorkerProcess(queue, extra_env={"LEDGER_LOCALNET_RPC_URL": localnet_url, "LEDGER_NETWORK_EVENTS_POLL_SECONDS": str(POLL_SECONDS), **LOCAL_WEBHOOK_ENV},
                               beat_schedule=tmp_path / "beat-schedule", log_path=tmp_path / "worker.log")
        worker.start()
        try:
            # The beat's first poll of the address sets its cursor; from then on latency is steady.
            wait_for(lambda: NetworkEventCursor.objects.filter(address=str(owner.pubkey()), polled_at__isnull=False).exists(), timeout=60, what="the first poll")
            payer = funded(chain)
            send(chain, payer, [transfer_lamports(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=owner.pubkey(), lamports=2_000_000))])
            landed = time.time()
            wait_for(lambda: receiver.delivered(), timeout=30, what="the network event")
            latency = receiver.delivered()[0].at - landed
        finally:
            worker.stop()
            route_tasks_to(previous_queue)
    [event] = receiver.delivered()
    payload = event.json
    assert payload["type"] == "account.network_event" and payload["tenantOrganizationId"] == "ACME"
    data = payload["data"]
    assert data["account"] == {"onchainId": str(owner.pubkey()), "offchainId": account["offchainId"]}
    assert data["success"] is True and data["lamports"] == {"before": 0, "after": 2_000_000, "change": 2_000_000}
    signatures = chain.get_signatures_for_address(owner.pubkey()).value
    assert data["signature"] == str(signatures[0].signature) and data["slot"] == signatures[0].slot
    assert verify_signature(_secret(tenant, created.json()["newWebhook"]["offchainId"]), event.headers, event.body)
    assert latency <= NETWORK_EVENT_LATENCY, latency
