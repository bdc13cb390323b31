"""Shared fixtures: tenants, keys, authenticated API clients (tests/README in docs/testing.md)."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from tenancy.tests.factories import TenantFactory, issue_key


class LedgerClient(APIClient):
    """APIClient speaking JSON with a bearer token; ``request_id=`` sets x-request-id."""

    def call(self, method: str, path: str, data=None, *, request_id: str | uuid.UUID | None = None, **extra):
        if request_id is not None:
            extra["HTTP_X_REQUEST_ID"] = str(request_id)
        return getattr(self, method.lower())(path, data, format="json", **extra)


def make_client(secret: str | None) -> LedgerClient:
    client = LedgerClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def tenant(db):
    return TenantFactory(external_id="ACME", name="Acme Bank")


@pytest.fixture
def other_tenant(db):
    return TenantFactory(external_id="GLOBEX", name="Globex")


@pytest.fixture
def api_key(tenant):
    return issue_key(tenant)


@pytest.fixture
def api(api_key) -> LedgerClient:
    return make_client(api_key.secret)


@pytest.fixture
def other_api(other_tenant) -> LedgerClient:
    return make_client(issue_key(other_tenant).secret)


@pytest.fixture
def anon() -> LedgerClient:
    return make_client(None)


def assert_error(response, status: int, code: str | None = None, field: str | None = None):
    """The spec's error shape, with the expected status (and code/field when given)."""
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"errors", "requestId"}, body
    assert body["errors"] and all(set(e) == {"code", "message", "field"} for e in body["errors"]), body
    if code is not None:
        assert code in [e["code"] for e in body["errors"]], body
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body
    return body


@pytest.fixture(autouse=True, scope="session")
def response_shapes_checked():
    """Every answer a fast renderer builds during the tests is checked against the
    serializer that documents it (ledger_project/api/shapes.py): every area's API tests are
    shape tests too."""
    from ledger_project.api.shapes import check_shapes

    check_shapes(True)
    yield
    check_shapes(False)


@pytest.fixture(autouse=True)
def process_caches_reset():
    """Per-process caches that outlive a test: the platform fee payer's row (rolled back
    or truncated with the test's database), the reused blockhash (docs/performance.md) and
    which lookup tables tenants have (docs/lookup-tables.md)."""
    from transactions import fee_payers, platform_keys
    from chain import builder
    from lookup_tables.compression import tenant_tables_forget

    fee_payers.fee_payer_cache_clear()
    platform_keys.platform_addresses_forget()
    builder.recent_blockhashes_clear()
    tenant_tables_forget()


#: outbound calls to this machine allowed (docs/webhooks.md, Safety): the tests' receivers
LOCAL_WEBHOOK_ENV = {"LEDGER_OUTBOUND_ALLOW_HTTP": "true", "LEDGER_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128"}


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, localnet_url):
    """One real worker per test process, consuming its own queue, on the shared node."""
    from tests.workers import WorkerProcess, new_queue_name, route_tasks_to

    queue = new_queue_name()
    route_tasks_to(queue)
    # Webhook receivers of the tests listen on this machine: what `make run` allows too.
    worker = WorkerProcess(queue, extra_env={"LEDGER_LOCALNET_RPC_URL": localnet_url, **LOCAL_WEBHOOK_ENV})
    with django_db_blocker.unblock():
        worker.start()
    yield worker
    worker.stop()


def _answers(url: str) -> bool:
    from localnet.testing import rpc_call

    try:
        return rpc_call(url, "getHealth", timeout=1).get("result") == "ok"
    except OSError:
        return False


@pytest.fixture(scope="session")
def localnet_url(tmp_path_factory):
    """The one local node of the test session.

    `make test` starts a node for the whole run and exports LEDGER_LOCALNET_RPC_URL; run
    alone, each test process starts its own. Settings of this process point at it, and
    the worker fixture passes it on.
    """
    import os

    from django.conf import settings

    from localnet.testing import LocalnetProcess

    url = os.environ.get("LEDGER_TEST_LOCALNET_URL", "")
    process = None
    if not url or not _answers(url):
        process = LocalnetProcess(tmp_path_factory.mktemp("localnet") / "data").start()
        url = process.url
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_LOCALNET": url}
    settings.LEDGER_LOCALNET_RPC_URL = url
    yield url
    if process is not None:
        process.stop()


@pytest.fixture(scope="session")
def chain(localnet_url):
    """solana-py Client on the shared node: tests check chain state independently.

    At `confirmed` commitment: history methods (getTransaction, getSignaturesForAddress)
    at the SDK's default `finalized` see a transaction only ~32 slots after it landed, on
    the local node as on any validator."""
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    return Client(localnet_url, timeout=10, commitment=Confirmed)


#: where test host names under the reserved ``.example`` TLD (RFC 2606) resolve: a public
#: address, so webhook URLs such as https://hooks.example/tx pass the outbound check
#: (ledger_project.outbound) without real DNS. Nothing is ever sent to it.
EXAMPLE_TLD_ADDRESS = "93.184.215.14"


@pytest.fixture(autouse=True)
def example_tld_resolves(monkeypatch):
    import ipaddress

    from ledger_project import outbound

    real = outbound._resolve

    def resolve(host: str, port: int):
        if host == "example" or host.endswith(".example"):
            return [ipaddress.ip_address(EXAMPLE_TLD_ADDRESS)]
        return real(host, port)

    monkeypatch.setattr(outbound, "_resolve", resolve)


def _flush_retrying_deadlocks():
    """Transactional tests end with a TRUNCATE of every table. The real Celery worker of
    the session may still be finishing a task for the previous test (a confirmation, a
    nonce-pool fill) whose transaction locks two tables in the other order: PostgreSQL
    then breaks the deadlock by failing one side, sometimes the TRUNCATE. The worker's
    side retries on its own; the flush is retried here (a test-harness race, not the
    service's)."""
    import time

    from django.db import OperationalError
    from django.test import testcases

    original = testcases.TransactionTestCase._fixture_teardown
    if getattr(original, "_retries_deadlocks", False):
        return

    def _fixture_teardown(self):
        for attempt in range(5):
            try:
                return original(self)
            except Exception as exc:  # CommandError wrapping OperationalError
                cause = exc.__cause__ if not isinstance(exc, OperationalError) else exc
                if attempt == 4 or not isinstance(cause, OperationalError) or "deadlock" not in str(cause):
                    raise
                time.sleep(0.2 * (attempt + 1))

    _fixture_teardown._retries_deadlocks = True
    testcases.TransactionTestCase._fixture_teardown = _fixture_teardown


_flush_retrying_deadlocks()


@pytest.fixture
def fault_front(localnet_url, tmp_path):
    """Fault fronts before the shared node (docs/chain.md "The fault front"):
    ``fault_front(profile, seed=0)`` starts one (a profile name, a JSON path or a dict) and
    returns its ``FaultFrontProcess`` (``.url``, ``.faults()``); all are stopped after the test."""
    from faultfront.testing import FaultFrontProcess

    started = []

    def start(profile="passthrough", seed: int = 0, **kwargs):
        front = FaultFrontProcess(localnet_url, profile, seed, work_dir=tmp_path, **kwargs).start()
        started.append(front)
        return front

    yield start
    for front in started:
        front.stop()
