"""Issue 36 behind a lagging pool (the fault front's ``lagging`` profile: reads answered by a
node some slots behind, -32016 for a ``minContextSlot`` it has not reached).

- The campaign's setup was answered 400 TRANSACTION_SIMULATION_FAILED "AlreadyProcessed" on
  Create Position: two processes topped up the platform fee payer on the local node in one
  slot (a lagging getBalance showed each the balance from before the other's airdrop), the
  faucet signed the very same bytes twice, and the node refused the second as processed.
- A request retried with the same x-request-id whose first attempt committed while the
  retry's network phase ran answers the first's stored answer, never a 5xx.
"""

from __future__ import annotations

import uuid

import pytest
from solders.pubkey import Pubkey

from chain.errors import ChainUnavailable
from chain.rpc import rpc_for
from faultfront.testing import FaultFrontProcess
from localnet.testing import LocalnetProcess, rpc_call
from tenancy.idempotency import REPLAY_HEADER
from tenancy.models import IdempotencyRecord, TenantOrganization
from transactions import fee_payers
from ledger_project.api.errors import api_error

CLUSTER = "CHAIN_LOCALNET"


@pytest.fixture
def slow_node(tmp_path):
    """A node of its own whose slots last 30 s: two calls of a test share one blockhash."""
    node = LocalnetProcess(tmp_path / "slow-node", extra_args=("--slot-seconds", "30")).start()
    yield node
    node.stop()


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_two_processes_topping_up_the_fee_payer_in_one_slot_behind_a_lagging_pool_both_go_on(slow_node, tmp_path, settings):
    front = FaultFrontProcess(slow_node.url, "lagging", 36, work_dir=tmp_path).start()
    try:
        settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: front.url}
        slot = rpc_call(slow_node.url, "getSlot")["result"]
        payer = fee_payers.platform_fee_payer(CLUSTER)  # process A: 0 lamports, tops up
        assert rpc_call(slow_node.url, "getBalance", [str(payer.pubkey), {"commitment": "confirmed"}])["result"]["value"] == fee_payers.LOCALNET_TOP_UP
        fee_payers._checked.clear()  # process B: its first request of the cluster
        assert rpc_for(CLUSTER).balance(Pubkey.from_string(str(payer.pubkey))) == 0  # the pool's stale view
        # The same faucet, recipient, amount and blockhash: the node refuses B's airdrop as
        # processed. Before the fix that refusal was B's request's 400.
        again = fee_payers.platform_fee_payer(CLUSTER)
        assert again.pubkey == payer.pubkey
        assert rpc_call(slow_node.url, "getSlot")["result"] == slot, "the slot changed: the two top-ups were not one transaction"
        assert rpc_call(slow_node.url, "getBalance", [str(payer.pubkey), {"commitment": "confirmed"}])["result"]["value"] == fee_payers.LOCALNET_TOP_UP  # landed once
    finally:
        front.stop()


@pytest.mark.chain
def test_an_identical_airdrop_already_processed_is_no_error(slow_node, settings):
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: slow_node.url}
    rpc = rpc_for(CLUSTER)
    address = Pubkey.from_string("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
    assert rpc.airdrop(address, 12345) is not None
    assert rpc.airdrop(address, 12345) is None  # the same bytes: processed already
    assert rpc.balance(address) == 12345


# -- a retry whose first attempt committed meanwhile ----------------------------------------------
PHASED = "/test/phased-probe"


@pytest.mark.urls("tests.support.urls")
@pytest.mark.django_db(transaction=True)
def test_a_retry_failing_in_its_network_phase_after_the_first_attempt_committed_replays_it(api, monkeypatch):
    """The first attempt of a request was still running when its client retried (a timeout,
    a lost connection); the retry's network phase fails (503) after the first committed.
    The retry answers the first's stored answer: the operation happened."""
    from tests.support import urls

    rid = uuid.uuid4()
    body = {"itemData": {"externalId": "RETRY1"}}
    first: list = []

    def network(external_id: str) -> None:
        if not first:  # the retry's network phase: the first attempt commits now, then the node fails
            first.append(None)
            monkeypatch.setattr(urls, "probe_network", lambda _: None)
            first[0] = api.call("post", PHASED, body, request_id=rid)
            monkeypatch.setattr(urls, "probe_network", network)
            raise ChainUnavailable("The RPC endpoint of CHAIN_LOCALNET did not answer.")

    monkeypatch.setattr(urls, "probe_network", network)
    retry = api.call("post", PHASED, body, request_id=rid)
    assert first[0].status_code == 201
    assert retry.status_code == 201, retry.content
    assert retry[REPLAY_HEADER] == "true" and retry.content == first[0].content
    assert TenantOrganization.objects.filter(external_id="RETRY1").count() == 1
    assert IdempotencyRecord.objects.filter(request_id=rid).count() == 1


@pytest.mark.urls("tests.support.urls")
@pytest.mark.django_db(transaction=True)
def test_a_network_phase_failure_with_nothing_committed_is_still_a_503(api, monkeypatch):
    from tests.support import urls

    def network(external_id: str) -> None:
        raise ChainUnavailable("The RPC endpoint of CHAIN_LOCALNET did not answer.")

    monkeypatch.setattr(urls, "probe_network", network)
    rid = uuid.uuid4()
    response = api.call("post", PHASED, {"itemData": {"externalId": "RETRY2"}}, request_id=rid)
    assert response.status_code == 503 and response["Retry-After"]
    assert not IdempotencyRecord.objects.filter(request_id=rid).exists()


# -- reads after a write carry minContextSlot ----------------------------------------------------
LAG = 4  # the profile's 8, shortened: the tests wait for the view to catch up


def _lagging(fault_front, settings, slots: int = LAG):
    front = fault_front({**_profile("lagging"), "lag": {"slots": slots}})
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: front.url}
    settings.LEDGER_RPC_DEADLINE_SECONDS = 8.0  # room for the view to pass the write (LAG slots)
    settings.LEDGER_RPC_MAX_ATTEMPTS = 12
    return front


def _profile(name: str) -> dict:
    from faultfront.profiles import PROFILES

    return {k: v for k, v in PROFILES[name].items() if k != "name"}


@pytest.mark.chain
def test_the_confirmation_prefetch_never_reads_accounts_from_a_node_behind_the_confirmation(fault_front, settings, chain, monkeypatch):
    """The pump's prefetch reads the accounts the effects need after the transaction
    confirmed; through a pool whose reads lag, that read carries the confirmation's slot as
    minContextSlot and is answered only once a node has reached it — never the account as
    it was before the write (which the effect would then apply)."""
    from solders.keypair import Keypair
    from solders.system_program import TransferParams, transfer

    from transactions import effects
    from transactions.models import Transaction
    from transactions.tests.chainkit import funded, next_slot, send, wait

    front = _lagging(fault_front, settings)
    payer, destination = funded(chain), Keypair().pubkey()
    rpc = rpc_for(CLUSTER)
    assert rpc.read_accounts([str(destination)]).accounts[str(destination)] is None  # the pool remembers it absent
    next_slot(chain)  # the write lands in a later slot than that read (the local node answers a slot's reads mid-slot)
    signature = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=destination, lamports=5_000_000))], v0=False)
    wait(chain, signature)
    assert rpc.read_accounts([str(destination)]).accounts[str(destination)] is None  # a plain read: still the old view
    raw = chain.get_transaction(signature, encoding="base64", max_supported_transaction_version=0).value
    landed = raw.slot
    tx = Transaction(pk=10**9, cluster=CLUSTER, onchain_id=str(signature), message=bytes(raw.transaction.transaction.message))
    monkeypatch.setattr(effects, "_ACCOUNTS_NEEDED", [lambda named: {t.pk: [str(destination)] for t, _ in named}])
    monkeypatch.setattr(effects, "_BALANCES_RECORDED", [])
    facts = effects.prefetch_many([tx])[tx.pk]
    assert facts.transaction.slot == landed
    assert facts.accounts_slot >= landed
    assert facts.accounts[str(destination)] is not None and facts.accounts[str(destination)].lamports == 5_000_000
    assert any(f["fault"] == "-32016" and f["method"] == "getMultipleAccounts" for f in front.faults())  # it was behind, and waited


@pytest.mark.chain
def test_reads_after_a_confirmation_the_pump_settled_reach_its_slot(fault_front, settings, chain):
    """A request's reads (a balance, an account) name no slot of their own; once the pump has
    settled a confirmation (``ChainRpc.wrote``, chain/floor.py) they carry its slot, so a
    lagging pool answers them only from a node that has seen it — not the balance as it was
    before the write."""
    from solders.keypair import Keypair
    from solders.system_program import TransferParams, transfer

    from transactions.tests.chainkit import funded, next_slot, send, wait

    front = _lagging(fault_front, settings)
    payer, destination = funded(chain), Keypair().pubkey()
    rpc = rpc_for(CLUSTER)
    assert rpc.balance(destination) == 0  # the pool remembers it empty
    next_slot(chain)
    signature = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=destination, lamports=5_000_000))], v0=False)
    wait(chain, signature)
    assert rpc.balance(destination) == 0  # no write of the service known: the pool's old view
    landed = chain.get_transaction(signature, encoding="base64", max_supported_transaction_version=0).value.slot
    rpc.wrote(landed)  # what the pump does when it settles the confirmation
    assert rpc.balance(destination) == 5_000_000
    assert rpc.account(destination).lamports == 5_000_000
    assert rpc.latest_blockhash().blockhash is not None
    assert any(f["fault"] == "-32016" and f["method"] == "getBalance" for f in front.faults())  # it was behind, and waited


@pytest.mark.chain
def test_a_read_no_node_can_answer_at_the_writes_slot_is_503_chain_behind_with_retry_after(fault_front, settings, chain):
    from chain.errors import ChainBehind
    from transactions.tests.chainkit import next_slot

    front = _lagging(fault_front, settings, slots=10**6)  # never catches up
    settings.LEDGER_RPC_DEADLINE_SECONDS = 0.8
    settings.LEDGER_RPC_RETRY_BASE_SECONDS = 0.05
    tip = next_slot(chain)
    address = str(Pubkey.from_string("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"))
    with pytest.raises(ChainBehind) as caught:
        rpc_for(CLUSTER).read_accounts([address], min_context_slot=tip)
    assert api_error(caught.value).status_code == 503 and caught.value.code == "CHAIN_BEHIND" and caught.value.retry_after >= 1
    assert front.url not in caught.value.message
    assert any(f["fault"] == "-32016" for f in front.faults())


@pytest.mark.chain
def test_a_node_behind_the_write_fails_over_to_one_that_reached_it(fault_front, settings, chain, localnet_url):
    from transactions.tests.chainkit import next_slot

    front = _lagging(fault_front, settings, slots=10**6)
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: f"{front.url}|{localnet_url}"}  # the lagging member first
    settings.LEDGER_RPC_DEADLINE_SECONDS = 0.8
    tip = next_slot(chain)
    read = rpc_for(CLUSTER).read_accounts(["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"], min_context_slot=tip)
    assert read.slot >= tip
    assert [f["fault"] for f in front.faults()] == ["-32016"]  # asked once, then the other member


@pytest.mark.urls("tests.support.urls")
@pytest.mark.django_db(transaction=True)
def test_an_api_request_whose_read_stays_behind_answers_503_chain_behind_with_retry_after(api, monkeypatch):
    from chain.errors import ChainBehind
    from conftest import assert_error
    from tests.support import urls

    def network(external_id: str) -> None:
        raise ChainBehind("The RPC endpoints of CHAIN_LOCALNET have not reached the slot of the service's latest write.", retry_after=2)

    monkeypatch.setattr(urls, "probe_network", network)
    response = api.call("post", PHASED, {"itemData": {"externalId": "BEHIND1"}}, request_id=uuid.uuid4())
    assert_error(response, 503, "CHAIN_BEHIND")
    assert response["Retry-After"] == "2"
    assert not TenantOrganization.objects.filter(external_id="BEHIND1").exists()


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_a_durable_nonce_request_behind_a_lagging_pool_reads_the_nonce_its_last_write_left(api, fault_front, settings, chain, monkeypatch):
    """Found by the campaign (profiles lagging and staging-mix: 400 INVALID_NONCE_ACCOUNT and
    TRANSACTION_SIMULATION_FAILED BlockhashNotFound on DURABLE_NONCE transfers): a pool nonce
    created or advanced a moment before was read from the lagging view as it was before the
    write — not yet a nonce account, or its previous value. The slot of the service's last
    write of the account (NonceAccount.written_slot) goes with the lease, and the read of
    its nonce waits for a node that has reached it."""
    from solders.hash import Hash

    from chain import builder
    from chain.errors import ChainRefused
    from transactions import nonce_pool
    from transactions.models import NonceAccount, Transaction
    from transactions.tests.test_nonce_pool import seeded_create, tenant_payer

    monkeypatch.setattr(nonce_pool, "_kick_fill", lambda cluster: None)  # this test's pool alone
    _lagging(fault_front, settings)
    payer = tenant_payer(api, chain)
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    row = NonceAccount.objects.get()
    address = Pubkey.from_string(row.address)
    assert row.written_slot is not None and row.written_slot > 0
    rpc = rpc_for(CLUSTER)
    with pytest.raises(ChainRefused, match="not an initialized nonce account"):
        builder.nonce_value(rpc, address)  # the pool's view remembers the account absent
    reads: list = []
    real = builder.nonce_value

    def noted(rpc, address, *, min_context_slot=None):
        reads.append((str(address), min_context_slot))
        return real(rpc, address, min_context_slot=min_context_slot)

    monkeypatch.setattr(builder, "nonce_value", noted)
    response = seeded_create(api, payer, 2_000_000)
    assert response.status_code == 201, response.json()  # before the fix: 400 INVALID_NONCE_ACCOUNT
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    assert tx.nonce_account == row.address
    assert reads == [(row.address, row.written_slot)]  # read no older than the creation
    monkeypatch.setattr(builder, "nonce_value", real)

    # An advance of the service's own: its slot is recorded, and a read at it sees the new value.
    stored = Hash(bytes(chain.get_account_info(address).value.data[40:72]))
    NonceAccount.objects.filter(pk=row.pk).update(leased_by=None, leased_at=None)
    Transaction.unscoped.filter(pk=tx.pk).update(status="EXPIRED")  # (the request's transaction: not this check's)
    assert nonce_pool.nonce_advance(cluster=CLUSTER, nonce_address=row.address, expected=str(stored)) is True
    advanced = NonceAccount.objects.get(pk=row.pk)
    assert advanced.written_slot > row.written_slot
    now_stored = Hash(bytes(chain.get_account_info(address).value.data[40:72]))
    assert now_stored != stored
    assert builder.nonce_value(rpc, address, min_context_slot=advanced.written_slot) == now_stored


@pytest.mark.chain
def test_a_nonce_read_at_the_slot_of_its_advance_never_answers_what_the_slot_held_before_it(slow_node, tmp_path, settings):
    """Found by the campaign (profile lagging: DURABLE_NONCE transfers 400
    TRANSACTION_SIMULATION_FAILED BlockhashNotFound though b629dc5 read the nonce at the slot
    of its last write): the read carried the write's slot S as minContextSlot and was answered
    the value the write had consumed, with context slot S. The fault front had remembered a
    read taken in slot S before the write executed in S as the node's answer for slot S; a
    real node's slot-S answer has all of slot S. The front now remembers such an answer as
    slot S - 1, so the read waits (-32016) for one taken after S."""
    import base64

    from solders.hash import Hash
    from solders.keypair import Keypair
    from solders.message import Message
    from solders.system_program import (
        AdvanceNonceAccountParams, CreateAccountParams, InitializeNonceAccountParams, advance_nonce_account, create_account, initialize_nonce_account,
    )
    from solders.transaction import VersionedTransaction

    from chain import builder

    node = slow_node.url

    def send(instructions, signers, blockhash: Hash) -> int:
        message = Message.new_with_blockhash(instructions, signers[0].pubkey(), blockhash)
        raw = base64.b64encode(bytes(VersionedTransaction(message, signers))).decode()
        signature = rpc_call(node, "sendTransaction", [raw, {"encoding": "base64"}])["result"]
        status = rpc_call(node, "getSignatureStatuses", [[signature]])["result"]["value"][0]
        assert status is not None and status["err"] is None, status
        return status["slot"]

    def warp(slots: int) -> int:
        return rpc_call(node, "localnetWarpSlots", [slots])["result"]

    payer, nonce = Keypair(), Keypair()
    rpc_call(node, "requestAirdrop", [str(payer.pubkey()), 10**9])
    rent = rpc_call(node, "getMinimumBalanceForRentExemption", [builder.NONCE_ACCOUNT_SIZE])["result"]
    latest = Hash.from_string(rpc_call(node, "getLatestBlockhash")["result"]["value"]["blockhash"])
    send([create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=nonce.pubkey(), lamports=rent, space=builder.NONCE_ACCOUNT_SIZE, owner=Pubkey.from_string("11111111111111111111111111111111"))),
          initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=nonce.pubkey(), authority=payer.pubkey()))], [payer, nonce], latest)
    slot = warp(LAG + 1)  # the nonce can advance (a new blockhash), and the view has seen it created

    front = FaultFrontProcess(node, {**_profile("lagging"), "lag": {"slots": LAG}}, 36, work_dir=tmp_path).start()
    try:
        settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: front.url}
        settings.LEDGER_RPC_DEADLINE_SECONDS, settings.LEDGER_RPC_MAX_ATTEMPTS = 30.0, 3 * LAG
        rpc = rpc_for(CLUSTER)
        rpc.transport.sleep = lambda seconds: warp(1)  # a retry waits one slot, exactly
        before = builder.nonce_value(rpc, nonce.pubkey(), min_context_slot=0)  # a request's read in slot S, through the pool
        written = send([advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=nonce.pubkey(), authorized_pubkey=payer.pubkey()))], [payer], before)
        assert written == slot, "the read and the advance were not in one slot"
        answer = rpc_call(node, "getAccountInfo", [str(nonce.pubkey()), {"encoding": "base64", "commitment": "confirmed"}])
        after = Hash(bytes(base64.b64decode(answer["result"]["value"]["data"][0])[40:72]))
        assert after != before
        warp(LAG)  # the pool's view reaches S
        # Before the fix: `before`, answered as of slot S (the simulation's BlockhashNotFound).
        assert builder.nonce_value(rpc, nonce.pubkey(), min_context_slot=written) == after
    finally:
        front.stop()
