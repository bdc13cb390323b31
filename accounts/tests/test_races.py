"""Races on one account (docs/style.md, "Locks and races"): the competing call is injected right after the
request under test built its transaction, before its write phase."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair

from accounts import services
from accounts.models import Account, AccountStatus
from accounts.tests.test_api_accounts import ACCOUNTS, create, localnet_airdrop_funding  # noqa: F401 (autouse fixture)
from conftest import assert_error
from instruments.tests.test_races import inject_after_build
from transactions.models import Transaction
from transactions.responses import wait_for

pytestmark = pytest.mark.chain


@pytest.mark.django_db(transaction=True)
def test_concurrent_inactivation_runs_once_and_the_second_is_409(api, celery_worker_process, monkeypatch):
    lookup = {"offchainId": create(api, {"managed": True, "seed": {"lamports": 3_000_000}}, wait=True).json()["newAccount"]["offchainId"]}

    def inactivate():
        body = {"itemData": {"account": lookup, "refundDestination": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}}}
        return api.call("patch", ACCOUNTS + "/inactivate", body)

    competing = inject_after_build(monkeypatch, services, inactivate)
    first = inactivate()
    assert competing[0].status_code == 200, competing[0].json()
    assert_error(first, 409, "OPERATION_IN_PROGRESS", "itemData.account")
    assert Transaction.unscoped.filter(operation="accounts.inactivate").count() == 1
    tx = Transaction.unscoped.get(operation="accounts.inactivate")
    assert Account.unscoped.get(offchain_id=lookup["offchainId"]).pending_transaction_id == tx.pk
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    account = Account.unscoped.get(offchain_id=lookup["offchainId"])
    assert account.status == AccountStatus.INACTIVE and account.pending_transaction_id is None


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_with_one_request_id_create_one_account(api_key, localnet_url):
    import threading
    import uuid

    from django.db import connection

    from conftest import make_client

    rid = uuid.uuid4()
    results: list = []
    barrier = threading.Barrier(3)

    def call():
        try:
            barrier.wait()
            response = create(make_client(api_key.secret), {"managed": True, "offchainReferences": {"code": "ONCE"}}, request_id=rid)
            results.append((response.status_code, response.content))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [status for status, _ in results] == [201, 201, 201]
    assert len({body for _, body in results}) == 1
    assert Account.unscoped.filter(code="ONCE").count() == 1


@pytest.mark.django_db(transaction=True)
def test_crash_in_the_write_phase_leaves_no_key_account_transaction_or_record(api, localnet_url, monkeypatch):
    import uuid

    from custody.models import ManagedKey
    from tenancy.models import IdempotencyRecord

    def crash(*args, **kwargs):
        raise RuntimeError("crash while recording")

    monkeypatch.setattr(services, "transaction_record", crash)
    from transactions.fee_payers import platform_fee_payer

    platform_fee_payer("CHAIN_LOCALNET")  # the platform's own key exists before counting
    rid = uuid.uuid4()
    keys = ManagedKey.objects.count()
    response = create(api, {"managed": True, "seed": {"lamports": 2_000_000}, "offchainReferences": {"code": "CRASHED"}}, request_id=rid)
    assert response.status_code == 500
    assert not Account.unscoped.filter(code="CRASHED").exists() and ManagedKey.objects.count() == keys
    assert not Transaction.unscoped.filter(operation="accounts.create").exists() and not IdempotencyRecord.objects.filter(request_id=rid).exists()
    monkeypatch.undo()
    retried = create(api, {"managed": True, "seed": {"lamports": 2_000_000}, "offchainReferences": {"code": "CRASHED"}}, request_id=rid)
    assert retried.status_code == 201, retried.json()
