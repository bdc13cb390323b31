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


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """One real worker per test process, consuming its own queue."""
    from tests.workers import WorkerProcess, new_queue_name, route_tasks_to

    queue = new_queue_name()
    route_tasks_to(queue)
    worker = WorkerProcess(queue)
    with django_db_blocker.unblock():
        worker.start()
    yield worker
    worker.stop()
