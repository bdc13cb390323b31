"""What one chain-changing request costs in SQL statements and RPC calls (issue 11;
docs/performance.md, "Per request"): a seeded account creation and a Transfer Financial
Instrument, through the API on the local node, counted after a first request warmed the
per-process state a running server keeps (the cached API key, the platform fee payer's row,
the reused blockhash, the compiled statements).

Counts, not times: a change that adds a query or a round trip to these paths fails here,
with the statements listed. One that removes some should lower the bounds (and the table in
docs/performance.md).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, transfer
from chain.rpc import ChainRpc
from transactions.tests.chainkit import rpc_method_name

pytestmark = pytest.mark.chain

#: statements per request, BEGIN and COMMIT included (Django logs both on either database);
#: sealing a new key takes the sealing lock, an advisory lock, on PostgreSQL only; after the
#: commit, one read of the cluster's pump lease (transactions/pump.py pump_kick); one insert
#: of the transaction's signer rows (TransactionSigner: Fetch Transactions' signer filter);
#: in the write phase, one read of the webhook subscriptions that want the transaction's
#: pre_submit event (webhooks/outbox.py; an INSERT more when there are some).
TRANSFER_STATEMENTS = {"postgresql": 19, "sqlite": 19}
SEEDED_ACCOUNT_STATEMENTS = {"postgresql": 17, "sqlite": 16}


@pytest.fixture(autouse=True)
def steady_state(settings):
    """What a running server has between requests: the API key cached and the last
    blockhash still within its reuse window (here: however slow the machine is)."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    settings.LEDGER_API_KEY_CACHE_SECONDS = 300
    settings.LEDGER_BLOCKHASH_REUSE_SECONDS = 300
    settings.LEDGER_LOOKUP_TABLE_CACHE_SECONDS = 300


@pytest.fixture
def rpc_calls(monkeypatch):
    """JSON-RPC methods called by this process (ChainRpc is the only client)."""
    calls: Counter = Counter()
    real = ChainRpc._call

    def counted(self, fn, *args, **kwargs):
        calls[rpc_method_name(fn, args)] += 1
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(ChainRpc, "_call", counted)
    return calls


@pytest.fixture(autouse=True)
def steady_fee_figure(settings):
    """The organization's platform-fee figure is read at most every few seconds per process
    (transactions/fees.py): the warm request reads it, and on a slow run the measured one
    came after its life and read it again (one statement more). A steady request reads it
    from the process's cache; that is the cost measured here."""
    settings.LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS = 3600


def _cost(rpc_calls, request):
    rpc_calls.clear()
    with CaptureQueriesContext(connection) as queries:
        response = request()
    assert response.status_code in (200, 201), response.json()
    calls = Counter(rpc_calls)
    # The localnet fee payer's balance check (at most every 10 s per process) may fall on
    # any request; it is not part of what a request costs.
    calls.pop("get_balance", None)
    return [q["sql"] for q in queries.captured_queries], dict(calls)


def _listing(statements) -> str:
    return "\n".join(f"{i + 1:2}. {sql[:160]}" for i, sql in enumerate(statements))


@pytest.mark.django_db(transaction=True)
def test_a_transfer_costs_a_bounded_number_of_statements_and_one_simulation(api, celery_worker_process, rpc_calls):
    authority, sender, receiver = wallet(api), wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    source, destination = position(api, sender, bond), position(api, receiver, bond)
    settled(mint(api, at(source), {"lamports": 1_000_000}))
    transfer(api, at(source), at(destination), {"lamports": 1}, wait=False, request_id=uuid.uuid4())  # warm

    statements, calls = _cost(rpc_calls, lambda: transfer(api, at(source), at(destination), {"lamports": 2}, wait=False, request_id=uuid.uuid4()))

    assert len(statements) <= TRANSFER_STATEMENTS[connection.vendor], _listing(statements)
    # No getLatestBlockhash (reused), no account reads: the simulation is the one round trip.
    assert calls == {"simulate_transaction": 1}


@pytest.mark.django_db(transaction=True)
def test_a_seeded_account_creation_costs_a_bounded_number_of_statements_and_its_funding(api, localnet_url, rpc_calls):
    def create():
        return api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}, request_id=uuid.uuid4())

    create()  # warm
    statements, calls = _cost(rpc_calls, create)

    assert len(statements) <= SEEDED_ACCOUNT_STATEMENTS[connection.vendor], _listing(statements)
    # The localnet airdrop funder (its airdrop and the check that it landed), then the
    # simulation; no rent query (cached per process), no getLatestBlockhash (reused).
    assert calls == {"request_airdrop": 1, "get_signature_statuses": 1, "simulate_transaction": 1}


@pytest.mark.django_db(transaction=True)
def test_without_blockhash_reuse_every_request_fetches_one(api, localnet_url, rpc_calls, settings):
    settings.LEDGER_BLOCKHASH_REUSE_SECONDS = 0

    def create():
        return api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}})

    create()
    _, calls = _cost(rpc_calls, create)
    assert calls.get("get_latest_blockhash") == 1
