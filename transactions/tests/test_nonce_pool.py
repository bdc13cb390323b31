"""The durable nonce pool: filled by a worker ahead of demand, leased by requests, never
created inside a request (docs/transactions.md, "Durable nonces")."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solders.hash import Hash
from solders.pubkey import Pubkey

from accounts.models import Account
from conftest import assert_error
from tenancy.models import IdempotencyRecord
from transactions import nonce_pool, tasks
from transactions.models import NonceAccount, NonceState, PlatformFeePayer, Transaction
from transactions.tests.chainkit import SYSTEM_PROGRAM, funded

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
NONCE = {"messageLifetimeStrategy": "DURABLE_NONCE"}


@pytest.fixture
def private_node(tmp_path, settings, monkeypatch):
    """A node of this test alone, so every nonce account on it can be accounted for; the
    pool task is not queued (the session worker would fill another node's pool)."""
    from localnet.testing import LocalnetProcess

    kicked: list[str] = []
    monkeypatch.setattr(nonce_pool, "_kick_fill", kicked.append)
    node = LocalnetProcess(tmp_path / "node").start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: node.url}
    try:
        yield Client(node.url, timeout=10, commitment=Confirmed), kicked
    finally:
        node.stop()


def onchain_nonce_accounts(client: Client) -> dict[str, bytes]:
    """Every nonce account on the node (system-owned, 80 bytes) → its authority."""
    found = client.get_program_accounts(SYSTEM_PROGRAM, encoding="base64", filters=[80]).value
    return {str(item.pubkey): bytes(item.account.data[8:40]) for item in found}


def tenant_payer(api, client: Client) -> dict:
    """feePayer of the tenant's own (a funded account whose key it keeps): it pays the seed."""
    payer = funded(client, 10**9)
    onboard = api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}})
    assert onboard.status_code == 201, onboard.json()
    return {"onchainId": str(payer.pubkey())}


def seeded_create(api, payer: dict, lamports: int, request_id=None):
    body = {"itemData": {"managed": True, "seed": {"lamports": lamports}}, "svmTransactionConfig": {**NONCE, "feePayer": payer}}
    return api.call("post", "/api/v1/accounts", body, request_id=request_id)


@pytest.mark.django_db(transaction=True)
def test_empty_pool_is_503_with_retry_after_and_changes_nothing(api, private_node):
    client, kicked = private_node
    payer = tenant_payer(api, client)
    accounts = Account.unscoped.count()
    response = seeded_create(api, payer, 2_000_000)
    assert_error(response, 503, "NONCE_POOL_EMPTY")
    assert int(response["Retry-After"]) > 0
    assert kicked == [CLUSTER]  # the pool task was asked to create more
    assert Account.unscoped.count() == accounts and not Transaction.unscoped.exists() and not NonceAccount.objects.exists()
    assert onchain_nonce_accounts(client) == {}


@pytest.mark.django_db(transaction=True)
def test_failed_request_leaves_no_onchain_nonce_account_without_its_row(api, private_node):
    client, _ = private_node
    payer = tenant_payer(api, client)
    # Before: the request created the account on chain in its own database transaction, and
    # the simulation failure rolled back its row and authority key.
    refused = seeded_create(api, payer, 10**18)
    assert refused.status_code in (400, 503), refused.json()
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    leased = nonce_pool.nonce_lease(cluster=CLUSTER)
    failed = seeded_create(api, payer, 10**18)  # the pool is empty again
    assert_error(failed, 503, "NONCE_POOL_EMPTY")
    nonce_pool.nonce_lease_release(nonce_account_id=leased.pk)
    failed = seeded_create(api, payer, 10**18)  # a free account, then a simulation failure
    assert_error(failed, 400, "TRANSACTION_SIMULATION_FAILED")
    rows = {row.address: bytes(Pubkey.from_string(row.authority_key.public_key)) for row in NonceAccount.objects.select_related("authority_key")}
    assert onchain_nonce_accounts(client) == rows
    assert NonceAccount.objects.get().leased_at is None  # the failed request holds no lease
    assert not Transaction.unscoped.exists()


@pytest.mark.django_db(transaction=True)
def test_pool_fill_creates_initialized_accounts_and_finishes_interrupted_ones(private_node):
    client, _ = private_node
    # A fill that crashed after recording the row and keys, before (or after) sending.
    interrupted = nonce_pool.nonce_account_record(cluster=CLUSTER)
    NonceAccount.objects.filter(pk=interrupted.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3) == 3
    rows = list(NonceAccount.objects.select_related("authority_key"))
    assert len(rows) == 3 and {r.state for r in rows} == {NonceState.READY} and interrupted.pk in {r.pk for r in rows}
    onchain = onchain_nonce_accounts(client)
    assert onchain == {r.address: bytes(Pubkey.from_string(r.authority_key.public_key)) for r in rows}
    for row in rows:
        account = client.get_account_info(Pubkey.from_string(row.address)).value
        assert int.from_bytes(bytes(account.data[4:8]), "little") == 1  # State::Initialized
        assert account.lamports == client.get_minimum_balance_for_rent_exemption(80).value
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3) == 0  # full: nothing to do


@pytest.mark.django_db(transaction=True)
def test_unbound_lease_is_reclaimed_after_the_timeout(private_node, settings):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    leased = nonce_pool.nonce_lease(cluster=CLUSTER)
    with pytest.raises(nonce_pool.NoncePoolEmpty):
        nonce_pool.nonce_lease(cluster=CLUSTER)
    assert nonce_pool.nonce_pool_reclaim(cluster=CLUSTER) == 0  # within the timeout: kept
    NonceAccount.objects.filter(pk=leased.pk).update(leased_at=timezone.now() - timedelta(seconds=settings.LEDGER_NONCE_LEASE_TIMEOUT_SECONDS + 1))
    assert nonce_pool.nonce_pool_reclaim(cluster=CLUSTER) == 1
    assert nonce_pool.nonce_lease(cluster=CLUSTER).pk == leased.pk


@pytest.mark.django_db(transaction=True)
def test_durable_nonce_request_uses_a_pooled_account(api, private_node):
    client, _ = private_node
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=2)
    response = seeded_create(api, tenant_payer(api, client), 2_000_000)
    assert response.status_code == 201, response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    lease = NonceAccount.objects.get(address=tx.nonce_account)
    assert lease.leased_by_id == tx.pk and lease.leased_at is not None
    assert len(onchain_nonce_accounts(client)) == 2  # nothing created by the request


@pytest.mark.django_db(transaction=True)
def test_refusal_in_the_write_phase_releases_the_nonce_lease(api, private_node, monkeypatch):
    from accounts import services as account_services
    from ledger_project.api.errors import ConflictError

    client, _ = private_node
    payer = tenant_payer(api, client)
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)

    def refuse(account, *, prefix="itemData"):
        raise ConflictError("injected conflict in the write phase", field=f"{prefix}.onchainId")

    monkeypatch.setattr(account_services, "account_save", refuse)
    assert_error(seeded_create(api, payer, 2_000_000), 409, "CONFLICT")
    row = NonceAccount.objects.get()
    assert row.leased_at is None and row.leased_by_id is None  # released now, not at the reclaim
    assert not Transaction.unscoped.exists()


@pytest.mark.django_db(transaction=True)
def test_pool_never_grows_past_its_maximum(private_node, settings):
    client, _ = private_node
    settings.LEDGER_NONCE_POOL_MAX = 2
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1) == 1
    nonce_pool.nonce_lease(cluster=CLUSTER)
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1) == 1
    nonce_pool.nonce_lease(cluster=CLUSTER)  # both held: the fill may not add a third
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1) == 0
    with pytest.raises(nonce_pool.NoncePoolEmpty):
        nonce_pool.nonce_lease(cluster=CLUSTER)
    assert NonceAccount.objects.count() == 2 and len(onchain_nonce_accounts(client)) == 2


@pytest.mark.django_db(transaction=True)
def test_tenant_nonce_lease_quota_is_429_and_changes_nothing(api, private_node, settings):
    client, _ = private_node
    settings.LEDGER_NONCE_LEASES_PER_TENANT = 1
    payer = tenant_payer(api, client)
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=2)
    assert seeded_create(api, payer, 2_000_000).status_code == 201
    accounts = Account.unscoped.count()
    request_id = uuid.uuid4()
    refused = seeded_create(api, payer, 2_000_000, request_id=request_id)
    assert_error(refused, 429, "NONCE_LEASE_QUOTA_EXCEEDED")
    assert int(refused["Retry-After"]) > 0
    assert Account.unscoped.count() == accounts and Transaction.unscoped.count() == 1
    assert NonceAccount.objects.filter(leased_at__isnull=False).count() == 1
    # A 429 says "later", so it is not kept for the request id: once a lease is free (here:
    # the quota raised), the same request, same x-request-id, runs and succeeds.
    assert not IdempotencyRecord.objects.filter(request_id=request_id).exists()
    settings.LEDGER_NONCE_LEASES_PER_TENANT = 2
    retried = seeded_create(api, payer, 2_000_000, request_id=request_id)
    assert retried.status_code == 201, retried.json()
    assert retried.get("x-idempotent-replay") is None
    assert seeded_create(api, payer, 2_000_000, request_id=request_id)["x-idempotent-replay"] == "true"


# --- trimming: free accounts beyond what the pool keeps are closed, their rent recovered ----


def platform_payer_balance(client: Client) -> int:
    return client.get_balance(Pubkey.from_string(PlatformFeePayer.objects.get(cluster=CLUSTER).managed_key.public_key)).value


def gone(client: Client, row: NonceAccount) -> bool:
    return client.get_account_info(Pubkey.from_string(row.address)).value is None


CLOSE_FEE = 2 * 5_000  # the platform fee payer's and the nonce authority's signatures


@pytest.mark.django_db(transaction=True)
def test_the_reserve_follows_demand_and_trim_keeps_it_while_the_load_lasts(private_node, settings, monkeypatch):
    """Leases last until finalization: with 3 held, the pool keeps 3 free (not the configured
    1), a lease that leaves fewer than half of that free kicks the fill, and the trim closes
    nothing of that reserve until the leases end."""
    client, kicked = private_node
    settings.LEDGER_NONCE_POOL_TARGET = settings.LEDGER_NONCE_POOL_TRIM_ABOVE = 1
    settings.LEDGER_NONCE_POOL_LOW_WATER = 0
    with monkeypatch.context() as patch:  # the fills need not wait for the next blockhash (the trim below does)
        patch.setattr(nonce_pool, "_next_blockhash", lambda rpc, address, **kwargs: True)
        assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3) == 3
        leased = [nonce_pool.nonce_lease(cluster=CLUSTER) for _ in range(3)]
        assert nonce_pool.pool_target(CLUSTER) == 3
        assert kicked  # the third lease left none of the reserve of three free
        assert nonce_pool.nonce_pool_fill(cluster=CLUSTER) == 3  # a second set, for the next requests
    assert nonce_pool._free(CLUSTER).count() == 3
    assert nonce_pool.nonce_pool_trim(cluster=CLUSTER) == 0  # the load lasts: the reserve stays
    for row in leased:
        nonce_pool.nonce_lease_release(nonce_account_id=row.pk)
    assert nonce_pool.pool_target(CLUSTER) == 1  # demand gone: back to the configured target
    assert nonce_pool.nonce_pool_trim(cluster=CLUSTER) == 5
    assert nonce_pool._free(CLUSTER).count() == 1 and len(onchain_nonce_accounts(client)) == 1
    assert NonceAccount.objects.filter(state=NonceState.CLOSED).count() == 5


@pytest.mark.django_db(transaction=True)
def test_trim_closes_free_accounts_above_target_and_returns_their_rent(private_node, settings, monkeypatch):
    client, _ = private_node
    settings.LEDGER_NONCE_POOL_TARGET = settings.LEDGER_NONCE_POOL_TRIM_ABOVE = 2
    # A fill that did not wait for the blockhash to move on (as a concurrent advance could
    # leave it): the trim must wait itself rather than fail "nonce can only advance once
    # per slot".
    with monkeypatch.context() as patch:
        patch.setattr(nonce_pool, "_next_blockhash", lambda rpc, address, **kwargs: True)
        assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=6) == 6  # demand has gone since
    leased = [nonce_pool.nonce_lease(cluster=CLUSTER) for _ in range(2)]  # in use: never touched
    rent = client.get_minimum_balance_for_rent_exemption(80).value
    before = platform_payer_balance(client)

    assert nonce_pool.nonce_pool_trim(cluster=CLUSTER) == 2  # four free, two kept
    closed = list(NonceAccount.objects.filter(state=NonceState.CLOSED))
    assert len(closed) == 2 and all(row.closed_at is not None for row in closed)
    assert all(gone(client, row) for row in closed)
    assert platform_payer_balance(client) == before + 2 * (rent - CLOSE_FEE)
    for row in leased:
        row.refresh_from_db()
        assert row.state == NonceState.READY and row.leased_at is not None and not gone(client, row)
    assert nonce_pool._free(CLUSTER).count() == 2
    kept = NonceAccount.objects.exclude(state=NonceState.CLOSED).select_related("authority_key")
    assert onchain_nonce_accounts(client) == {r.address: bytes(Pubkey.from_string(r.authority_key.public_key)) for r in kept}
    assert nonce_pool.nonce_pool_trim(cluster=CLUSTER) == 0  # at the target: nothing to do
    # A lease ends: one free account too many, which the beat's pool task closes.
    nonce_pool.nonce_lease_release(nonce_account_id=leased[0].pk)
    assert tasks.fill_nonce_pool(cluster=CLUSTER) == 0
    assert nonce_pool._free(CLUSTER).count() == 2 and NonceAccount.objects.filter(state=NonceState.CLOSED).count() == 3
    # Closed accounts no longer count towards LEDGER_NONCE_POOL_MAX.
    settings.LEDGER_NONCE_POOL_MAX = 4
    assert nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3) == 1


@pytest.mark.django_db(transaction=True)
def test_trim_interrupted_after_marking_closing_is_finished_by_the_next_run(private_node, monkeypatch):
    client, _ = private_node
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    rent = client.get_minimum_balance_for_rent_exemption(80).value

    def killed(row):
        raise RuntimeError("worker killed after the withdraw landed")

    with monkeypatch.context() as patch:
        patch.setattr(nonce_pool, "_mark_closed", killed)
        with pytest.raises(RuntimeError):
            nonce_pool.nonce_pool_trim(cluster=CLUSTER, keep=2)
    withdrawn = NonceAccount.objects.get(state=NonceState.CLOSING)
    assert gone(client, withdrawn)  # on chain it is closed; the row still says CLOSING
    claimed = nonce_pool._claim_for_closing(CLUSTER)  # killed after the claim, before sending
    assert claimed.state == NonceState.CLOSING and not gone(client, claimed)
    assert nonce_pool.nonce_lease(cluster=CLUSTER).pk not in (withdrawn.pk, claimed.pk)  # CLOSING is never leased
    before = platform_payer_balance(client)

    assert nonce_pool.nonce_pool_trim(cluster=CLUSTER, keep=0) == 2  # finishes both; the leased one stays
    for row in (withdrawn, claimed):
        row.refresh_from_db()
        assert row.state == NonceState.CLOSED and gone(client, row)
    assert platform_payer_balance(client) == before + rent - CLOSE_FEE  # only the claimed one was still to withdraw
    assert NonceAccount.objects.filter(state=NonceState.READY, leased_at__isnull=False).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_lease_and_a_trim_never_take_the_same_account(private_node, monkeypatch):
    client, _ = private_node
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    real_free = nonce_pool._free
    calls: list[int] = []
    raced: list[int] = []

    def lease_wins_the_race(cluster):
        # _free's third call is the trim's conditional UPDATE of the candidate it read on the
        # second: a request leases that very account in between.
        calls.append(1)
        if len(calls) == 3:
            candidate = real_free(cluster).order_by("-pk").values_list("pk", flat=True).first()
            assert real_free(cluster).filter(pk=candidate).update(leased_at=timezone.now()) == 1
            raced.append(candidate)
        return real_free(cluster)

    with monkeypatch.context() as patch:
        patch.setattr(nonce_pool, "_free", lease_wins_the_race)
        assert nonce_pool.nonce_pool_trim(cluster=CLUSTER, keep=1) == 1
    leased = NonceAccount.objects.get(pk=raced[0])
    assert leased.state == NonceState.READY and leased.leased_at is not None and not gone(client, leased)
    assert NonceAccount.objects.filter(state=NonceState.CLOSED).count() == 1

    # The other way round: the trim claimed the last free account first; the lease finds none.
    last = nonce_pool._claim_for_closing(CLUSTER)
    assert last is not None and last.pk != leased.pk
    with pytest.raises(nonce_pool.NoncePoolEmpty):
        nonce_pool.nonce_lease(cluster=CLUSTER)


@pytest.mark.django_db(transaction=True)
def test_a_new_pool_account_can_be_used_at_once(private_node):
    """The fill waits until the blockhash its nonce was stored under has passed, so a lease
    can use the account at once (a validator refuses it within that blockhash)."""
    client, _ = private_node
    for _ in range(3):
        nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=NonceAccount.objects.count() + 1)
        row = NonceAccount.objects.order_by("-pk").first()
        stored = Hash(bytes(client.get_account_info(Pubkey.from_string(row.address)).value.data[40:72]))
        assert nonce_pool.nonce_advance(cluster=CLUSTER, nonce_address=row.address, expected=str(stored)) is True


@pytest.mark.django_db
def test_a_durable_nonce_transaction_that_failed_on_chain_leaves_its_slot_as_the_nonces_last_write(tenant):
    """It executed (and advanced its nonce) at its slot: the lease ends with that slot kept,
    so the next lease reads the nonce no older than it (behind a lagging pool it would read
    the value the failed transaction consumed); a later record never moves it back."""
    from solders.keypair import Keypair

    from custody.services import managed_key_generate
    from transactions.ending import finish
    from transactions.models import MessageLifetime, TransactionStatus

    address = str(Keypair().pubkey())
    tx = Transaction.unscoped.create(tenant=tenant, cluster=CLUSTER, operation="test.op", status=TransactionStatus.SUBMITTED, message=b"", blockhash="x",
                                     fee_payer="x", lifetime=MessageLifetime.DURABLE_NONCE, nonce_account=address)
    row = NonceAccount.objects.create(cluster=CLUSTER, address=address, authority=str(Keypair().pubkey()), authority_key=managed_key_generate(), leased_by=tx,
                                      leased_at=timezone.now(), written_slot=100)
    assert finish(tx, TransactionStatus.FAILED, slot=250, error_message="custom program error")
    row.refresh_from_db()
    assert (row.leased_by_id, row.written_slot) == (None, 250)
    NonceAccount.objects.filter(pk=row.pk).update(written_slot=nonce_pool.later_slot(200))
    assert NonceAccount.objects.get(pk=row.pk).written_slot == 250
