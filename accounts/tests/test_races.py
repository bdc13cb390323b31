"""Races on one account (STYLE.md rule 11): the competing call is injected right after the
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
    assert Transaction.objects.filter(operation="accounts.inactivate").count() == 1
    tx = Transaction.objects.get(operation="accounts.inactivate")
    assert Account.objects.get(offchain_id=lookup["offchainId"]).pending_transaction_id == tx.pk
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    account = Account.objects.get(offchain_id=lookup["offchainId"])
    assert account.status == AccountStatus.INACTIVE and account.pending_transaction_id is None
