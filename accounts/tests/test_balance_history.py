"""Balance history records what each transaction left, in chain order, however its
confirmations arrive (docs/accounts.md, balances)."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer

from custody.services import managed_key_import
from accounts.models import Account, BalanceSnapshot
from tests.workers import paused_workers, wait_for
from transactions import services, settlement
from transactions.models import Transaction, TransactionStatus
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded, next_slot

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"


def sent_transfer(tenant, chain, to: Pubkey, lamports: int) -> Transaction:
    """A transfer submitted by the service (landed on the node), not yet confirmed by it."""
    source = funded(chain, 10**9)
    with db_transaction.atomic():
        tx = services.transaction_prepare(
            tenant=tenant, cluster=CLUSTER, operation="test.transfer", submit=False,
            instructions=[transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=to, lamports=lamports))],
            signers=[SignerSpec(source.pubkey(), managed_key_import(secret=str(source)))],
        )
    Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
    assert settlement.transaction_submit(transaction_id=tx.pk)
    signature = Signature.from_string(tx.onchain_id)
    wait_for(lambda: chain.get_signature_statuses([signature]).value[0] is not None, what="the transfer")
    return tx


@pytest.mark.django_db(transaction=True)
def test_transfers_confirmed_out_of_order_keep_history_in_chain_order(api, tenant, chain):
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"code": "RECEIVER"}}})
    assert response.status_code == 201, response.json()
    account = Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"])
    receiver = Pubkey.from_string(account.address)

    with paused_workers():  # this test sends and confirms them itself, in the order it chooses
        first = sent_transfer(tenant, chain, receiver, 2_000_000)
        next_slot(chain)
        second = sent_transfer(tenant, chain, receiver, 3_000_000)
        # The second confirmation is processed before the first (two workers, one slower).
        for tx in (second, first):
            settlement.transaction_confirm(transaction_id=tx.pk)
            tx.refresh_from_db()
            assert tx.status == TransactionStatus.CONFIRMED
    assert first.slot < second.slot

    account.refresh_from_db()
    assert int(account.lamports_balance) == 5_000_000 and account.last_transaction_id == second.pk
    history = list(BalanceSnapshot.objects.filter(account=account).order_by("at", "pk").values_list("transaction_id", "lamports"))
    assert [(tx_id, int(lamports)) for tx_id, lamports in history] == [(first.pk, 2_000_000), (second.pk, 5_000_000)]
    shown = api.call("post", "/api/v1/accounts/single", {"itemData": {"offchainId": str(account.offchain_id)}}).json()
    assert shown["offchain"]["lamportsBalance"] == 5_000_000


@pytest.mark.django_db(transaction=True)
def test_transfers_confirmed_together_out_of_order_keep_history_in_chain_order(api, tenant, chain):
    """The pump applies many confirmations in one database transaction (set-based balance
    writes): a later transfer taken before an earlier one in the same chunk still leaves
    the later balance and the history in chain order."""
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"code": "RECEIVER2"}}})
    account = Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"])
    receiver = Pubkey.from_string(account.address)
    with paused_workers():
        first = sent_transfer(tenant, chain, receiver, 2_000_000)
        next_slot(chain)
        second = sent_transfer(tenant, chain, receiver, 3_000_000)
        rows = {tx.pk: tx for tx in Transaction.unscoped.filter(pk__in=[first.pk, second.pk])}
        assert settlement.transactions_follow([rows[second.pk], rows[first.pk]]) == {first.pk, second.pk}  # one chunk, later one first

    account.refresh_from_db()
    assert int(account.lamports_balance) == 5_000_000 and account.last_transaction_id == second.pk
    history = list(BalanceSnapshot.objects.filter(account=account).order_by("at", "pk").values_list("transaction_id", "lamports"))
    assert [(tx_id, int(lamports)) for tx_id, lamports in history] == [(first.pk, 2_000_000), (second.pk, 5_000_000)]
