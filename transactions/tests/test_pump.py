"""The transaction pump (transactions/pump.py): batches, one holder per shard, shards shared
between holders, handover.

The tests drive passes in this process while holding the cluster's leases themselves, so a
worker's pump left from another test cannot take their transactions."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction as db_transaction
from django.utils import timezone
from solders.keypair import Keypair
from solders.signature import Signature
from solders.system_program import TransferParams, transfer

from custody.services import managed_key_import
from tests.workers import wait_for
from transactions import effects, pump, resign, services, shards
from chain.rpc import rpc_for
from transactions.models import PumpLease, PumpMember, Transaction, TransactionEvent, TransactionStatus
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded, hold_pump

pytestmark = [pytest.mark.chain]
CLUSTER = "CHAIN_LOCALNET"
HOLDER = "test-holder"


@pytest.fixture
def lease():
    """This test holds the cluster's pump leases, every shard's (waiting for a worker's to lapse)."""
    wait_for(lambda: hold_pump(CLUSTER, HOLDER), timeout=15, what="the pump leases")
    yield
    pump.lease_release(CLUSTER, HOLDER)


def _signed(tenant, source: Keypair, count: int) -> list[Transaction]:
    """``count`` SIGNED transfers due for sending, recorded without kicking any pump."""
    signer = SignerSpec(source.pubkey(), managed_key_import(secret=str(source)))
    rows = []
    for index in range(count):
        with db_transaction.atomic():
            rows.append(services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", signers=[signer], submit=False,
                                                     instructions=[transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000_000 + index))]))
    Transaction.unscoped.filter(pk__in=[tx.pk for tx in rows]).update(submit_when_signed=True)
    return rows


@pytest.fixture
def rpc_log(monkeypatch):
    """Every HTTP request the cluster client sends: the JSON-RPC methods in it."""
    session = rpc_for(CLUSTER).client._provider.session
    post = session.post
    requests: list[list[str]] = []

    def counting(*args, **kwargs):
        body = json.loads(kwargs.get("content") or kwargs.get("data") or "null")
        requests.append([item["method"] for item in body] if isinstance(body, list) else [body["method"]])
        return post(*args, **kwargs)

    monkeypatch.setattr(session, "post", counting)
    return requests


@pytest.mark.django_db(transaction=True)
def test_one_pass_sends_confirms_and_applies_many_in_a_few_requests(tenant, chain, lease, rpc_log, monkeypatch):
    rows = _signed(tenant, funded(chain, 10**9), 30)
    monkeypatch.setattr(resign, "_next_check", {})  # this pass looks for unsent rows near their end (at most once a second)
    rpc_log.clear()
    sent, in_flight = pump.pump_pass(CLUSTER)
    assert sent == 30 and in_flight == 30  # CONFIRMED, followed until finalized
    for tx in rows:
        tx.refresh_from_db()
        assert tx.status == TransactionStatus.CONFIRMED and tx.effects_applied_at is not None
        assert chain.get_signature_statuses([Signature.from_string(tx.onchain_id)]).value[0] is not None
    assert TransactionEvent.objects.filter(transaction__in=rows, kind="EFFECTS_APPLIED").count() == 30
    # One height for the unsent rows' look (none is near its end), one batch of sends, one status
    # lookup, one batch of getTransaction: not one per transaction.
    assert rpc_log == [["getBlockHeight"], ["sendTransaction"] * 30, ["getSignatureStatuses"], ["getTransaction"] * 30]


@pytest.mark.django_db(transaction=True)
def test_a_handler_failing_for_one_transaction_leaves_the_others_settled(tenant, chain, lease, monkeypatch):
    rows = _signed(tenant, funded(chain, 10**9), 3)
    apply = effects.apply
    poisoned = rows[1].pk

    def failing(tx, facts):
        if tx.pk == poisoned:
            raise RuntimeError("a bug in one handler")
        apply(tx, facts)

    monkeypatch.setattr(effects, "apply", failing)
    pump.pump_pass(CLUSTER)
    states = {tx.pk: (tx.status, tx.effects_applied_at is not None) for tx in Transaction.unscoped.filter(pk__in=[r.pk for r in rows])}
    assert states[rows[0].pk] == states[rows[2].pk] == (TransactionStatus.CONFIRMED, True)
    assert states[poisoned] == (TransactionStatus.SUBMITTED, False)  # rolled back to its savepoint, still in flight
    monkeypatch.setattr(effects, "apply", apply)
    pump.pump_pass(CLUSTER)  # the next pass applies it, once
    assert TransactionEvent.objects.filter(transaction_id=poisoned, kind="EFFECTS_APPLIED").count() == 1
    assert Transaction.unscoped.get(pk=poisoned).status == TransactionStatus.CONFIRMED


@pytest.mark.django_db(transaction=True)
def test_one_holder_per_cluster_until_its_lease_lapses():
    assert pump.lease_take("CHAIN_DEVNET", "a") and pump.lease_take("CHAIN_DEVNET", "a")  # taken, renewed
    assert not pump.lease_take("CHAIN_DEVNET", "b") and pump.lease_live("CHAIN_DEVNET")
    PumpLease.objects.filter(cluster="CHAIN_DEVNET").update(lease_until=timezone.now() - timedelta(seconds=1))  # "a" was killed
    assert not pump.lease_live("CHAIN_DEVNET")
    assert pump.lease_take("CHAIN_DEVNET", "b")
    assert not pump.lease_take("CHAIN_DEVNET", "a")  # the old holder, back, stops
    pump.lease_release("CHAIN_DEVNET", "b")
    assert not pump.lease_live("CHAIN_DEVNET")


@pytest.mark.django_db(transaction=True)
def test_a_pump_that_lost_its_lease_stops(tenant, chain, monkeypatch):
    wait_for(lambda: not pump.lease_live(CLUSTER), timeout=15, what="no pump running")
    passes = []

    def stolen(cluster, renew=None, shards=None):
        passes.append(cluster)
        PumpLease.objects.filter(cluster=cluster).update(holder="another", lease_until=timezone.now() + timedelta(seconds=30))
        return 0, 0

    monkeypatch.setattr(pump, "pump_pass", stolen)
    assert pump.pump_run(CLUSTER, holder=HOLDER, run_seconds=10) is False
    assert passes == [CLUSTER]
    assert set(PumpLease.objects.filter(cluster=CLUSTER).values_list("holder", flat=True)) == {"another"}  # not released by the loser
    PumpLease.objects.filter(cluster=CLUSTER).update(holder="", lease_until=timezone.now())


@pytest.mark.django_db(transaction=True)
def test_work_committed_while_the_pump_stops_is_reported_for_another_run(tenant, chain, settings, monkeypatch):
    """A request that saw the lease live did not kick; the stopping pump must find its row."""
    wait_for(lambda: not pump.lease_live(CLUSTER), timeout=15, what="no pump running")
    settings.LEDGER_PUMP_IDLE_SECONDS = 0
    source = funded(chain, 10**9)
    release = pump.lease_release
    late: list[Transaction] = []

    def release_then_commit(cluster, holder, shards=None):
        release(cluster, holder, shards)
        if shards is None:  # the pump stopping, not giving back a surplus
            late.extend(_signed(tenant, source, 1))  # committed just after the leases were given up

    monkeypatch.setattr(pump, "lease_release", release_then_commit)
    reported = pump.pump_run(CLUSTER, holder=HOLDER, run_seconds=5)
    # Reported for another run — unless the row's own kick (its commit saw no live lease)
    # already started a pump in the session's worker that holds its shard.
    assert reported is True or pump.lease_live(CLUSTER, shards.shard_of(late[0].shard_key))
    monkeypatch.setattr(pump, "lease_release", release)
    assert pump.pump_run(CLUSTER, holder=HOLDER, run_seconds=5) in (True, False)  # the next run sends it (or that pump does)

    def landed():
        late[0].refresh_from_db()
        return late[0].status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)

    wait_for(landed, timeout=30, what="the late transaction pumped")


@pytest.mark.django_db(transaction=True)
def test_watch_starts_a_pump_only_where_work_waits_and_none_runs(tenant, chain, lease):
    _signed(tenant, funded(chain, 10**9), 1)
    assert pump.clusters_needing_pump() == []  # this test's lease is live
    pump.lease_release(CLUSTER, HOLDER)
    assert pump.clusters_needing_pump() == [CLUSTER]
    hold_pump(CLUSTER, HOLDER)


@pytest.mark.django_db(transaction=True)
def test_a_failing_batch_hook_is_redone_one_transaction_at_a_time(tenant, chain, lease, monkeypatch):
    rows = _signed(tenant, funded(chain, 10**9), 4)
    seen: list[int] = []

    def set_based(confirmed):
        if len(confirmed) > 1:
            raise RuntimeError("a bug on the set-based path")
        seen.extend(tx.pk for tx, _ in confirmed)

    monkeypatch.setattr(effects, "_BATCH", [*effects._BATCH, set_based])
    pump.pump_pass(CLUSTER)
    assert sorted(seen) == sorted(tx.pk for tx in rows)  # each once, on the per-transaction path
    assert all(tx.status == TransactionStatus.CONFIRMED and tx.effects_applied_at for tx in Transaction.unscoped.filter(pk__in=seen))
    assert TransactionEvent.objects.filter(transaction__in=rows, kind="EFFECTS_APPLIED").count() == 4


# --- shards (docs/transactions.md, "Shards") ---------------------------------------------------


def test_the_ordering_key_is_the_nonce_account_else_the_authority_else_the_fee_payer():
    assert shards.ordering_key(nonce_account="Nonce1", fee_payer="Payer", required_signers=["Payer", "Owner"]) == "Nonce1"
    assert shards.ordering_key(nonce_account="", fee_payer="Payer", required_signers=["Payer", "Owner", "Other"]) == "Owner"
    assert shards.ordering_key(nonce_account="", fee_payer="Payer", required_signers=["Payer"]) == "Payer"
    assert shards.bucket_of("Owner") == shards.bucket_of("Owner") < shards.BUCKETS  # stable: a CRC, not Python's salted hash


def test_every_bucket_has_one_shard_whatever_the_shard_count(settings):
    for count in (1, 3, 8):
        settings.LEDGER_PUMP_SHARDS = count
        dealt = [shards.buckets_of({shard}) for shard in range(count)]
        assert sorted(b for buckets in dealt for b in (buckets or range(shards.BUCKETS))) == list(range(shards.BUCKETS))
        assert shards.buckets_of(set(range(count))) is None  # every shard: no filter (one shard pumps as one pump did)


@pytest.mark.django_db(transaction=True)
def test_a_source_s_transactions_share_a_shard_and_a_pass_sends_only_its_holder_s_shards(tenant, chain, lease, settings):
    settings.LEDGER_PUMP_SHARDS = 8
    first, second = funded(chain, 10**9), funded(chain, 10**9)
    while shards.shard_of(shards.bucket_of(str(second.pubkey()))) == shards.shard_of(shards.bucket_of(str(first.pubkey()))):
        second = funded(chain, 10**9)
    mine, theirs = _signed(tenant, first, 3), _signed(tenant, second, 2)
    assert {tx.shard_key for tx in mine} == {shards.bucket_of(str(first.pubkey()))}  # recorded with the row
    shard = shards.shard_of(mine[0].shard_key)
    sent, _ = pump.pump_pass(CLUSTER, shards=frozenset({shard}))
    assert sent == 3
    assert {tx.status for tx in Transaction.unscoped.filter(pk__in=[tx.pk for tx in mine])} == {TransactionStatus.CONFIRMED}
    assert {tx.status for tx in Transaction.unscoped.filter(pk__in=[tx.pk for tx in theirs])} == {TransactionStatus.SIGNED}  # another shard's
    pump.pump_pass(CLUSTER)  # every shard
    assert {tx.status for tx in Transaction.unscoped.filter(pk__in=[tx.pk for tx in theirs])} == {TransactionStatus.CONFIRMED}


@pytest.mark.django_db(transaction=True)
def test_holders_share_the_shards_and_each_shard_has_one_holder(settings):
    settings.LEDGER_PUMP_SHARDS = 8
    cluster = "CHAIN_DEVNET"  # no worker pumps it
    a, waiting = pump._rebalance(cluster, "a", frozenset())
    assert a == frozenset(range(8)) and not waiting  # alone: every shard, as the single pump
    b, waiting = pump._rebalance(cluster, "b", frozenset())
    assert b == frozenset() and waiting  # "a" holds more than its share now
    a, _ = pump._rebalance(cluster, "a", a)
    assert len(a) == 4  # the surplus given back
    b, _ = pump._rebalance(cluster, "b", b)
    assert len(b) == 4 and not a & b
    holders = dict(PumpLease.objects.filter(cluster=cluster, lease_until__gt=timezone.now()).values_list("shard", "holder"))
    assert holders == {**{s: "a" for s in a}, **{s: "b" for s in b}}
    c, waiting = pump._rebalance(cluster, "c", frozenset())  # a third: ceil(8 / 3) = 3 each
    a, _ = pump._rebalance(cluster, "a", a)
    b, _ = pump._rebalance(cluster, "b", b)
    c, _ = pump._rebalance(cluster, "c", c)
    assert (len(a), len(b), len(c)) == (3, 3, 2) and not (a & b or b & c or a & c)
    for holder in ("a", "b", "c"):
        pump._member_leave(cluster, holder)
        pump.lease_release(cluster, holder)


@pytest.mark.django_db(transaction=True)
def test_a_killed_holder_s_shards_are_taken_over_once_its_leases_lapse(settings):
    settings.LEDGER_PUMP_SHARDS = 4
    cluster = "CHAIN_DEVNET"
    a, _ = pump._rebalance(cluster, "a", frozenset())
    b, _ = pump._rebalance(cluster, "b", frozenset())
    a, _ = pump._rebalance(cluster, "a", a)
    b, _ = pump._rebalance(cluster, "b", b)
    assert len(a) == len(b) == 2
    # "a" is killed with SIGKILL: nothing is released; its leases and membership run out.
    b, _ = pump._rebalance(cluster, "b", b)
    assert len(b) == 2  # not before they lapse
    past = timezone.now() - timedelta(seconds=1)
    PumpLease.objects.filter(cluster=cluster, holder="a").update(lease_until=past)
    PumpMember.objects.filter(cluster=cluster, holder="a").update(seen_until=past)
    b, _ = pump._rebalance(cluster, "b", b)
    assert b == frozenset(range(4))
    assert pump.leases_renew(cluster, "a", a) == frozenset()  # "a", back, has lost them
    pump._member_leave(cluster, "b")
    pump.lease_release(cluster, "b")


@pytest.mark.django_db(transaction=True)
def test_a_request_kicks_a_pump_only_when_its_own_shard_has_no_holder(monkeypatch, settings):
    from transactions import tasks

    settings.LEDGER_PUMP_SHARDS = 4
    kicked: list[str] = []
    monkeypatch.setattr(tasks.pump, "delay", lambda **kwargs: kicked.append(kwargs["cluster"]))
    assert pump.lease_take("CHAIN_DEVNET", "a", 2)
    pump.pump_kick("CHAIN_DEVNET", 2)
    assert kicked == []  # shard 2's holder finds the row
    pump.pump_kick("CHAIN_DEVNET", 3)
    assert kicked == ["CHAIN_DEVNET"]
    pump.lease_release("CHAIN_DEVNET", "a")


def test_a_holder_gives_back_half_the_work_not_its_idle_shards():
    loads = {0: 250, 1: 188, 2: 187, 3: 125, 4: 125, 5: 63, 6: 62}  # shard 7 idle (bench_drain's spread)
    kept = pump.shards_kept(frozenset(range(8)), 4, loads)
    given = frozenset(range(8)) - kept
    assert len(kept) == len(given) == 4
    assert sum(loads.get(s, 0) for s in kept) == sum(loads.get(s, 0) for s in given) == 500
    assert pump.shards_kept(frozenset(range(8)), 4, {}) == frozenset(range(4))  # nothing waiting: by number


def _slow_pass(seconds: float, during):
    """A pump pass that waits on the network for ``seconds`` (a hanging node), calling
    ``during()`` half-way, and moves nothing."""
    import time

    def slow(cluster, renew=None, shards=None):
        time.sleep(seconds / 2)
        during()
        time.sleep(seconds / 2)
        return 0, 0

    return slow


@pytest.mark.django_db(transaction=True)
def test_a_pass_slower_than_its_lease_keeps_its_shards(settings, monkeypatch):
    """The fault front's flaky profile: calls that hang for a lease's length or more. The
    running pump's keeper renews its leases, so another holder does not take its shards and
    the two do not stop each other in turn."""
    settings.LEDGER_PUMP_SHARDS = 2
    settings.LEDGER_PUMP_LEASE_SECONDS = 0.6
    settings.LEDGER_PUMP_IDLE_SECONDS = 0
    cluster = "CHAIN_DEVNET"  # no worker pumps it
    taken = []
    monkeypatch.setattr(pump, "pump_pass", _slow_pass(2.4, lambda: taken.extend(s for s in range(2) if pump.lease_take(cluster, "other", s))))
    assert pump.pump_run(cluster, holder="slow", run_seconds=10) is False
    assert taken == []  # four leases' time in one pass, and the shards were never free
    assert not pump.lease_live(cluster)  # given back when it stopped


@pytest.mark.django_db(transaction=True)
def test_a_pass_that_never_comes_back_loses_its_shards(settings, monkeypatch):
    """A wedged loop is not kept alive by its keeper: after LEDGER_PUMP_STALL_SECONDS its
    leases lapse and another holder takes the shards, as from a killed one."""
    settings.LEDGER_PUMP_SHARDS = 2
    settings.LEDGER_PUMP_LEASE_SECONDS = 0.6
    settings.LEDGER_PUMP_STALL_SECONDS = 0.3
    settings.LEDGER_PUMP_IDLE_SECONDS = 0
    cluster = "CHAIN_DEVNET"
    taken = []
    monkeypatch.setattr(pump, "pump_pass", _slow_pass(2.4, lambda: taken.extend(s for s in range(2) if pump.lease_take(cluster, "other", s))))
    assert pump.pump_run(cluster, holder="wedged", run_seconds=10) is False  # lost them: stops
    assert taken == [0, 1]
    assert set(PumpLease.objects.filter(cluster=cluster).values_list("holder", flat=True)) == {"other"}  # not released by the loser
    pump.lease_release(cluster, "other")
