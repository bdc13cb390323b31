"""The back office on the local node: actions through the API's services (the transaction
records the staff user), the "open on the chain" page, and the dashboard's figures from a
running worker with beat (heartbeats, task results, node, fee payer, held transactions)."""

from __future__ import annotations

import json

import pytest
from django_celery_results.models import TaskResult
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account
from backoffice.models import AuditKind, Heartbeat, StaffAuditEntry
from instruments.models import FinancialInstrument
from positions.tests.kit import instrument, wallet
from transactions.models import Transaction, TransactionEvent
from transactions.responses import wait_for

from .staff import client_for, staff_user

pytestmark = pytest.mark.chain

ACCOUNTS, INSTRUMENTS = "/admin/accounts/account/", "/admin/instruments/financialinstrument/"


@pytest.fixture(autouse=True)
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def confirmed_wallet(api, **item) -> Account:
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}, **item}})
    assert response.status_code == 201, response.json()
    return Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"])


def run(client, url: str, action: str, pks, **options) -> str:
    form = {"action": action, "_selected_action": list(pks), "index": "0"}
    confirm = client.post(url, form)
    assert confirm.status_code == 200 and 'name="_staff_confirmed"' in confirm.content.decode()
    return client.post(url, {**form, **options, "_staff_confirmed": "yes"}, follow=True).content.decode()


@pytest.mark.django_db(transaction=True)
def test_operator_pauses_an_instrument_and_inactivates_accounts_through_the_services(api, client, chain, celery_worker_process):
    operator = client_for(client, staff_user("operator"))
    authority = wallet(api)
    bond = instrument(api, authority=authority, version="TOKEN_2022", pausableAuthority=authority)
    record = FinancialInstrument.unscoped.get(offchain_id=bond["offchainId"])

    done = run(operator, INSTRUMENTS, "pause", [record.pk])
    assert "1 instrument(s): pause transaction recorded" in done
    tx = Transaction.unscoped.get(operation="instruments.pause")
    assert tx.created_by_key is None and TransactionEvent.objects.get(transaction=tx, kind="REQUESTED_IN_ADMIN").detail == {"user": "operator"}
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    record.refresh_from_db()
    assert record.paused is True
    refused = run(operator, INSTRUMENTS, "pause", [record.pk])  # the service's rules hold here too
    assert "already paused" in refused

    empty, seeded, refund = confirmed_wallet(api), confirmed_wallet(api, seed={"lamports": 50_000_000}), confirmed_wallet(api)
    done = run(operator, ACCOUNTS, "inactivate", [empty.pk])
    empty.refresh_from_db()
    assert "1 account(s) inactivated" in done and empty.status == "INACTIVE"
    # Lamports need a refund destination: refused without one, closed on the network with one.
    assert "give refundDestination" in run(operator, ACCOUNTS, "inactivate", [seeded.pk])
    done = run(operator, ACCOUNTS, "inactivate", [seeded.pk], refund_destination=refund.address)
    assert "closing transaction recorded" in done
    closing = Transaction.unscoped.get(operation="accounts.inactivate")
    assert TransactionEvent.objects.get(transaction=closing, kind="REQUESTED_IN_ADMIN").detail == {"user": "operator"}
    assert wait_for(closing, "confirmed").status in ("CONFIRMED", "FINALIZED")
    seeded.refresh_from_db()
    assert seeded.status == "INACTIVE" and chain.get_balance(Pubkey.from_string(seeded.address)).value == 0
    audited = StaffAuditEntry.objects.filter(kind=AuditKind.ACTION, actor="operator").values_list("action", flat=True)
    assert sorted(audited) == ["inactivate", "inactivate", "inactivate", "pause", "pause"]


@pytest.mark.django_db(transaction=True)
def test_open_on_the_chain_shows_the_clusters_own_answer(api, client, chain, celery_worker_process):
    viewer = client_for(client, staff_user("viewer"))
    account = confirmed_wallet(api, seed={"lamports": 7_000_000})
    page = viewer.get(f"/admin/chain/accounts/account/{account.pk}/")
    assert page.status_code == 200
    answer = json.loads(page.context["answer_json"])
    assert answer["result"]["value"]["lamports"] == chain.get_balance(Pubkey.from_string(account.address)).value == 7_000_000
    assert answer["result"]["value"]["owner"] == "11111111111111111111111111111111"
    created = Transaction.unscoped.get(pk=account.creation_transaction_id)
    tx_page = viewer.get(f"/admin/chain/transactions/transaction/{created.pk}/")
    landed = json.loads(tx_page.context["answer_json"])["result"]
    assert landed["transaction"]["signatures"][0] == created.onchain_id and landed["meta"]["err"] is None
    # An address with nothing on it, as the cluster says.
    gone = Account.unscoped.filter(pk=account.pk)
    gone.update(address=str(Keypair().pubkey()))
    absent = viewer.get(f"/admin/chain/accounts/account/{account.pk}/").content.decode()
    assert "The cluster has no account at this address." in absent


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_shows_a_running_worker_and_beat(api, client, chain, localnet_url, tmp_path):
    from tests.workers import wait_for as wait_until, worker_with_beat

    superuser = client_for(client, staff_user(None, "root", superuser=True))
    before = superuser.get("/admin/").context["dashboard"]
    assert [hb["stale"] for hb in before["heartbeats"]] == [True, True]  # no heartbeat yet
    with worker_with_beat(localnet_url, tmp_path):
        account = confirmed_wallet(api, seed={"lamports": 1_000_000})  # the worker confirms it
        assert account.status == "ACTIVE"
        wait_until(lambda: {"beat", "worker"} <= set(Heartbeat.objects.values_list("name", flat=True)), timeout=60, what="heartbeats")
        wait_until(lambda: TaskResult.objects.filter(task_name="ledger.backoffice.heartbeat", status="SUCCESS").exists(), timeout=30, what="a stored task result")
        dashboard = superuser.get("/admin/").context["dashboard"]
        assert [hb["stale"] for hb in dashboard["heartbeats"]] == [False, False]
        local = next(c for c in dashboard["clusters"] if c["cluster"] == "CHAIN_LOCALNET")
        assert local["healthy"] and local["node"]["slot"] > 0 and local["fee_payer_lamports"] > 0
        assert "ledger.backoffice.heartbeat" in superuser.get("/admin/django_celery_results/taskresult/").content.decode()
