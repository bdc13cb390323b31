"""Issue 36, found behind a fault proxy: a node's transient error (-32005 "Node is
unhealthy") answered Initialize Position and Transfer with 500 CHAIN_RPC_ERROR, and a
request whose write had committed could still answer a 5xx, so its retry with the same
x-request-id ran again instead of replaying the success. Reproduced through a tiny
fault-injecting JSON-RPC front (tests/faultfront_mini.py) between the service and the
local node; outcomes depend on counts of faults, never on timing."""

from __future__ import annotations

import uuid

import pytest

from conftest import assert_error
from positions.tests import kit, movekit
from transactions.models import Transaction

from .faultfront_mini import FaultFront

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"


@pytest.fixture
def front(localnet_url, settings):
    settings.LEDGER_RPC_DEADLINE_SECONDS = 0.6
    settings.LEDGER_RPC_RETRY_BASE_SECONDS = 0.05
    with FaultFront(localnet_url) as f:
        yield f


def through(settings, front) -> None:
    """The service's calls of the local node go through the fault front from now on."""
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: front.url}


@pytest.fixture
def owner_and_instrument(api, celery_worker_process, chain, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True  # rent paid by the local funder (positions/tests/conftest.py)
    authority = kit.wallet(api)
    return kit.wallet(api), kit.instrument(api, authority=authority)


@pytest.mark.django_db(transaction=True)
def test_node_unhealthy_on_initialize_position_is_503_with_retry_after_and_stores_nothing(api, owner_and_instrument, front, settings):
    owner, instrument = owner_and_instrument
    through(settings, front)
    front.rules["simulateTransaction"] = ["always:unhealthy"]
    request_id = uuid.uuid4()
    rows = Transaction.unscoped.count()
    response = kit.initialize(api, owner, instrument, wait=False, request_id=request_id)
    body = assert_error(response, 503, "CHAIN_UNAVAILABLE")
    assert int(response["Retry-After"]) >= 1 and "127.0.0.1" not in str(body)
    assert front.seen.count("simulateTransaction") >= 2  # retried, not a tight loop (bounded by the deadline)
    assert Transaction.unscoped.count() == rows
    front.rules.clear()  # the node recovers: the same request id runs afresh
    retried = kit.initialize(api, owner, instrument, wait=True, request_id=request_id)
    assert retried.status_code == 201, retried.json()
    assert retried.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED")


@pytest.mark.django_db(transaction=True)
def test_a_passing_fault_on_transfer_is_retried_inside_the_request(api, owner_and_instrument, front, settings, chain):
    owner, instrument = owner_and_instrument
    source = kit.position(api, owner, instrument)
    movekit.settled(movekit.mint(api, movekit.at(source), {"amount": "5"}))
    destination = kit.position(api, kit.wallet(api), instrument)
    through(settings, front)
    # The 429's Retry-After is 1 s: a deadline that holds it (with 0.6 s the request could
    # only pass when the blockhash was still cached from the mint, in process — not in Redis).
    settings.LEDGER_RPC_DEADLINE_SECONDS = 3.0
    settings.LEDGER_BLOCKHASH_REUSE_SECONDS = 0  # the 429 is met, whatever the cache holds
    front.rules["simulateTransaction"] = ["unhealthy", "502"]
    front.rules["getLatestBlockhash"] = ["429"]
    response = movekit.transfer(api, movekit.at(source), movekit.at(destination), {"amount": "2"}, wait=False, request_id=uuid.uuid4())
    assert response.status_code == 200, response.json()
    assert response.json()["svmTransaction"]["status"] in ("SIGNED", "SUBMITTED", "CONFIRMED", "FINALIZED")


@pytest.mark.django_db(transaction=True)
def test_a_wait_that_fails_after_commit_answers_the_committed_result_and_the_retry_replays_it(api, owner_and_instrument, monkeypatch, chain):
    """The write phase committed (its transaction will reach the chain): whatever the
    ?wait= then meets, the answer is that result, never a 5xx — and the same request id
    replays it rather than building (and sending) a second transaction."""
    from chain.errors import ChainRpcError
    from transactions import responses

    owner, instrument = owner_and_instrument

    def node_fails(*args, **kwargs):
        raise ChainRpcError("The RPC endpoint of CHAIN_LOCALNET answered an error: Node is unhealthy")

    monkeypatch.setattr(responses, "wait_for", node_fails)
    request_id = uuid.uuid4()
    first = kit.initialize(api, owner, instrument, wait=True, request_id=request_id)
    assert first.status_code == 201, first.content[:300]
    assert first.json()["svmTransaction"]["status"] == "SIGNED"
    monkeypatch.undo()
    again = kit.initialize(api, owner, instrument, wait=True, request_id=request_id)
    assert again.status_code == 201 and again["x-idempotent-replay"] == "true"
    assert again.json() == first.json()
    assert Transaction.unscoped.filter(request_id=request_id).count() == 1


def _already_processed(*args, **kwargs):
    from chain.errors import SimulationFailed

    raise SimulationFailed("AlreadyProcessed", err="TransactionErrorFieldless.AlreadyProcessed")


@pytest.mark.django_db(transaction=True)
def test_a_retry_whose_simulation_finds_the_first_attempts_transaction_processed_replays_the_first(api, owner_and_instrument, monkeypatch, chain):
    """The client retried while its first attempt was still running; that attempt committed
    and its transaction executed while the retry built the very same message, so the retry's
    simulation answers AlreadyProcessed (what Agave's status cache answers for a processed
    message). The retry answers the first attempt's result, not 400."""
    from chain.rpc import ChainRpc

    owner, instrument = owner_and_instrument
    request_id = uuid.uuid4()
    real = ChainRpc.simulate
    first: list = []

    def simulate(self, transaction, **kwargs):
        if first:
            return real(self, transaction, **kwargs)
        first.append(None)
        first[0] = kit.initialize(api, owner, instrument, wait=True, request_id=request_id)  # the first attempt, to the end
        _already_processed()

    monkeypatch.setattr(ChainRpc, "simulate", simulate)
    retry = kit.initialize(api, owner, instrument, wait=True, request_id=request_id)
    assert first[0].status_code == 201, first[0].content[:300]
    assert retry.status_code == 201 and retry["x-idempotent-replay"] == "true", retry.content[:300]
    assert retry.json()["svmTransaction"]["offchainId"] == first[0].json()["svmTransaction"]["offchainId"]
    assert Transaction.unscoped.filter(request_id=request_id).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_message_the_node_already_processed_is_409_duplicate_transaction_not_a_simulation_failure(api, owner_and_instrument, monkeypatch):
    from chain.rpc import ChainRpc

    owner, instrument = owner_and_instrument
    monkeypatch.setattr(ChainRpc, "simulate", _already_processed)
    rows = Transaction.unscoped.count()
    assert_error(kit.initialize(api, owner, instrument, wait=False, request_id=uuid.uuid4()), 409, "DUPLICATE_TRANSACTION")
    assert Transaction.unscoped.count() == rows
