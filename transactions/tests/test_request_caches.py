"""What a process keeps between requests (docs/performance.md): the reused blockhash
(``builder.recent_blockhash``) and the platform fee payer's row (``fee_payers``); and the
request path's direct rendering of a transaction result."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from solders.hash import Hash
from solders.keypair import Keypair
from solders.system_program import TransferParams, transfer

from custody import services as custody
from tenancy.context import OperationContext
from transactions import fee_payers
from chain import builder
from chain.rpc import ChainRpc, LatestBlockhash, rpc_for
from transactions.models import PlatformFeePayer
from transactions.services import SignerSpec, transaction_build

from transactions.tests.chainkit import rpc_method_name  # noqa: E402

CLUSTER = "CHAIN_LOCALNET"


@pytest.fixture
def rpc_calls(monkeypatch):
    calls: Counter = Counter()
    real = ChainRpc._call

    def counted(self, fn, *args, **kwargs):
        calls[rpc_method_name(fn, args)] += 1
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(ChainRpc, "_call", counted)
    return calls


def _plan(payer, reuse: float, lamports: int = 1) -> builder.BuildPlan:
    ix = transfer(TransferParams(from_pubkey=payer, to_pubkey=payer, lamports=lamports))
    return builder.BuildPlan(instructions=[ix], fee_payer=payer, blockhash_reuse_seconds=reuse)


# --- the reused blockhash --------------------------------------------------------------------------


@pytest.mark.chain
def test_builds_within_the_window_share_one_blockhash_and_its_last_valid_height(localnet_url, rpc_calls):
    rpc, payer = rpc_for(CLUSTER), Keypair().pubkey()
    first = builder.build(_plan(payer, 60, lamports=1), rpc)
    second = builder.build(_plan(payer, 60, lamports=2), rpc)
    assert rpc_calls["get_latest_blockhash"] == 1
    assert (second.blockhash, second.last_valid_block_height) == (first.blockhash, first.last_valid_block_height)
    assert second.reused_blockhash and not first.reused_blockhash
    # The node's own answer for that blockhash: expiry (lastValidBlockHeight) stays exact.
    assert first.last_valid_block_height >= rpc.block_height()


@pytest.mark.chain
def test_without_a_window_every_build_fetches_a_blockhash(localnet_url, rpc_calls):
    rpc, payer = rpc_for(CLUSTER), Keypair().pubkey()
    builder.build(_plan(payer, 0, lamports=1), rpc)
    builder.build(_plan(payer, 0, lamports=2), rpc)
    assert rpc_calls["get_latest_blockhash"] == 2


@pytest.mark.chain
def test_a_message_built_again_on_the_reused_blockhash_gets_a_fresh_one(localnet_url, rpc_calls):
    rpc, payer = rpc_for(CLUSTER), Keypair().pubkey()
    first = builder.build(_plan(payer, 60), rpc)
    deadline = time.monotonic() + 10
    while rpc.latest_blockhash().blockhash == first.blockhash:  # the node's next slot
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rpc_calls.clear()
    again = builder.build(_plan(payer, 60), rpc)  # the very same instructions: one transaction if it reused
    assert again.blockhash != first.blockhash and not again.reused_blockhash
    assert rpc_calls["get_latest_blockhash"] == 1
    # The fresh blockhash is the one reused from now on.
    assert builder.build(_plan(payer, 60, lamports=3), rpc).blockhash == again.blockhash


@pytest.mark.chain
@pytest.mark.django_db
def test_a_reused_blockhash_the_node_does_not_know_is_replaced_and_simulated_again(localnet_url, tenant):
    rpc = rpc_for(CLUSTER)
    # A transfer of a key of the test's own (the platform fee payer only pays the fee:
    # docs/custody.md, "Platform keys").
    source = Keypair()
    rpc.airdrop(source.pubkey(), 10**9)
    deadline = time.monotonic() + 10
    while rpc.balance(source.pubkey()) == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    unknown = LatestBlockhash(Hash.new_unique(), 10**9)
    entry = builder._recent.setdefault(CLUSTER, builder._RecentBlockhash())
    entry.value, entry.fetched_at = unknown, time.monotonic()
    prepared = transaction_build(
        context=OperationContext.system(tenant=tenant, cluster=CLUSTER), operation="test", instructions=_plan(source.pubkey(), 0).instructions, signers=[SignerSpec(source.pubkey(), keypair=source)],
    )
    assert prepared.blockhash != str(unknown.blockhash)
    assert rpc.is_blockhash_valid(Hash.from_string(prepared.blockhash))


# --- the platform fee payer's row --------------------------------------------------------------------


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_the_fee_payer_row_is_read_once_then_again_when_its_master_key_is_no_longer_current(localnet_url, monkeypatch):
    first = fee_payers.platform_fee_payer(CLUSTER)
    with CaptureQueriesContext(connection) as queries:
        assert fee_payers.platform_fee_payer(CLUSTER) == first
    assert len(queries) == 0
    # A rotation: the cached row's key is sealed under a key that is no longer the current one.
    monkeypatch.setattr(custody, "current_master_key_id", lambda: "rotated")
    with CaptureQueriesContext(connection) as queries:
        assert fee_payers.platform_fee_payer(CLUSTER).pubkey == first.pubkey
    assert len(queries) == 1


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_a_fee_payer_row_created_in_a_transaction_that_rolls_back_is_not_kept(localnet_url):
    class Abort(Exception):
        pass

    with pytest.raises(Abort):
        with transaction.atomic():
            created = fee_payers.platform_fee_payer(CLUSTER)
            raise Abort
    assert not PlatformFeePayer.objects.exists()
    assert fee_payers.platform_fee_payer(CLUSTER).pubkey != created.pubkey
    assert PlatformFeePayer.objects.get(cluster=CLUSTER).managed_key.public_key == str(fee_payers.platform_fee_payer(CLUSTER).pubkey)


# --- the transaction result, rendered without the serializer ------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("status, approval_required, confirmations, error", [
    ("SIGNED", False, None, ""), ("PENDING_APPROVAL", True, None, "Held for approval: over the limit."),
    ("CONFIRMED", False, 3, ""), ("FAILED", False, 0, "The transaction failed on chain."), ("CANCELLED", True, None, "Rejected."),
])
def test_the_transaction_result_is_what_its_serializer_writes(tenant, status, approval_required, confirmations, error):
    from transactions.models import Transaction
    from transactions.responses import transaction_result
    from transactions.serializers import TransactionResultOutput

    tx = Transaction.unscoped.create(
        tenant=tenant, cluster=CLUSTER, operation="test", status=status, approval_required=approval_required, confirmations_count=confirmations,
        error_message=error, onchain_id=str(Keypair().sign_message(b"m")), message=b"message bytes", blockhash=str(Hash.new_unique()), fee_payer=str(Keypair().pubkey()),
    )
    tx.refresh_from_db()
    expected = TransactionResultOutput(tx).data
    assert transaction_result(tx) == expected
    assert list(transaction_result(tx)) == list(expected)
    assert transaction_result(None) is None
