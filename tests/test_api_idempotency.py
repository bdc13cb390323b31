"""x-request-id makes mutations idempotent per API key."""

import threading
import uuid

import pytest
from django.db import connection

from conftest import assert_error, make_client
from tenancy import services
from tenancy.models import IdempotencyRecord, TenantOrganization
from tenancy.tests.factories import issue_key

PROBE = "/test/probe"
pytestmark = pytest.mark.urls("tests.support.urls")


@pytest.mark.django_db
class TestReplay:
    def test_replay_returns_stored_response_without_running_again(self, api):
        rid = uuid.uuid4()
        first = api.call("post", PROBE, {"itemData": {"externalId": "NEW1"}}, request_id=rid)
        second = api.call("post", PROBE, {"itemData": {"externalId": "NEW1"}}, request_id=rid)
        assert first.status_code == second.status_code == 201
        assert first.json() == second.json()
        assert second["x-idempotent-replay"] == "true"
        assert TenantOrganization.objects.filter(external_id="NEW1").count() == 1

    def test_same_id_different_body_is_409(self, api):
        rid = uuid.uuid4()
        api.call("post", PROBE, {"itemData": {"externalId": "NEW2"}}, request_id=rid)
        response = api.call("post", PROBE, {"itemData": {"externalId": "NEW3"}}, request_id=rid)
        assert_error(response, 409, "REQUEST_ID_REUSED", "x-request-id")
        assert not TenantOrganization.objects.filter(external_id="NEW3").exists()

    def test_client_errors_are_replayed_too(self, api):
        rid = uuid.uuid4()
        first = api.call("post", PROBE, {"itemData": {"externalId": "X", "count": 50}}, request_id=rid)
        second = api.call("post", PROBE, {"itemData": {"externalId": "X", "count": 50}}, request_id=rid)
        assert first.status_code == second.status_code == 400
        assert first.json() == second.json()

    def test_ids_are_per_api_key(self, api, tenant):
        rid = uuid.uuid4()
        other = make_client(issue_key(tenant).secret)
        assert api.call("post", PROBE, {"itemData": {"externalId": "K1"}}, request_id=rid).status_code == 201
        # The same id from another key is a new request: it runs (and conflicts on the data).
        assert_error(other.call("post", PROBE, {"itemData": {"externalId": "K1"}}, request_id=rid), 409, "CONFLICT")

    def test_crashed_request_leaves_no_record_and_can_be_retried(self, api):
        rid = uuid.uuid4()
        assert api.call("post", PROBE, {"itemData": {"externalId": "CRASH2"}}, request_id=rid).status_code == 500
        assert not IdempotencyRecord.objects.filter(request_id=rid).exists()

    def test_without_request_id_nothing_is_stored(self, api):
        api.call("post", PROBE, {"itemData": {"externalId": "NOID"}})
        assert IdempotencyRecord.objects.count() == 0

    def test_purge_removes_only_old_records(self, api):
        rid = uuid.uuid4()
        api.call("post", PROBE, {"itemData": {"externalId": "OLD"}}, request_id=rid)
        assert services.idempotency_records_purge(older_than_hours=1) == 0
        IdempotencyRecord.objects.update(created_at="2000-01-01T00:00:00Z")
        assert services.idempotency_records_purge() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_id_run_once(tenant):
    secret = issue_key(tenant).secret
    rid = uuid.uuid4()
    results: list = []
    barrier = threading.Barrier(4)

    def call():
        try:
            barrier.wait()
            response = make_client(secret).call("post", PROBE, {"itemData": {"externalId": "RACE"}}, request_id=rid)
            results.append((response.status_code, response.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 4
    assert {status for status, _ in results} == {201}
    assert len({str(body) for _, body in results}) == 1
    assert TenantOrganization.objects.filter(external_id="RACE").count() == 1


# --- Phased mutations: read, network (no transaction), one write phase ------------------

PHASED = "/test/phased-probe"


@pytest.mark.django_db
def test_replay_sends_the_stored_bytes(api):
    rid = uuid.uuid4()
    first = api.call("post", PHASED, {"itemData": {"externalId": "BYTES"}}, request_id=rid)
    second = api.call("post", PHASED, {"itemData": {"externalId": "BYTES"}}, request_id=rid)
    assert first.status_code == second.status_code == 201
    assert second["x-idempotent-replay"] == "true"
    assert second.content == first.content and list(second.json()) == ["zeta", "created", "alpha", "amount"]
    assert bytes(IdempotencyRecord.objects.get(request_id=rid).response_bytes) == first.content
    # The Decimal amount is replayed with its exact digits, as the real renderer wrote it.
    assert b'"amount":18446744073.709551615' in first.content
    assert b'"amount":18446744073.709551615' in second.content


@pytest.mark.django_db
def test_refusal_inside_the_write_phase_rolls_back_its_rows_and_is_replayed(api):
    rid = uuid.uuid4()
    first = api.call("post", PHASED, {"itemData": {"externalId": "REFUSE1"}}, request_id=rid)
    assert_error(first, 409, "CONFLICT")
    assert not TenantOrganization.objects.filter(external_id="REFUSE1").exists()
    second = api.call("post", PHASED, {"itemData": {"externalId": "REFUSE1"}}, request_id=rid)
    assert second.status_code == 409 and second.content == first.content


@pytest.mark.django_db
def test_refusal_inside_the_write_phase_runs_the_abort_actions(api):
    from tests.support import urls

    first = api.call("post", PHASED, {"itemData": {"externalId": "REFUSE2"}}, request_id=uuid.uuid4())
    assert_error(first, 409, "CONFLICT")
    assert urls.ABORTED.count("REFUSE2") == 1


@pytest.mark.django_db(transaction=True)
def test_crash_in_the_write_phase_leaves_nothing_and_releases_what_was_leased(api):
    from tests.support import urls

    rid = uuid.uuid4()
    assert api.call("post", PHASED, {"itemData": {"externalId": "CRASH9"}}, request_id=rid).status_code == 500
    assert not IdempotencyRecord.objects.filter(request_id=rid).exists()
    assert not TenantOrganization.objects.filter(external_id="CRASH9").exists()
    assert "CRASH9" in urls.ABORTED


@pytest.mark.django_db(transaction=True)
def test_network_phase_holds_no_database_transaction(api, monkeypatch):
    from tests.support import urls

    seen = []
    monkeypatch.setattr(urls, "probe_network", lambda external_id: seen.append(connection.in_atomic_block))
    assert api.call("post", PHASED, {"itemData": {"externalId": "NET1"}}, request_id=uuid.uuid4()).status_code == 201
    assert seen == [False]


@pytest.mark.django_db(transaction=True)
def test_concurrent_phased_requests_with_one_id_write_once(tenant):
    secret = issue_key(tenant).secret
    rid = uuid.uuid4()
    results: list = []
    barrier = threading.Barrier(4)

    def call():
        try:
            barrier.wait()
            response = make_client(secret).call("post", PHASED, {"itemData": {"externalId": "PRACE"}}, request_id=rid)
            results.append((response.status_code, response.content))
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 4
    assert {status for status, _ in results} == {201}
    assert len({body for _, body in results}) == 1
    assert TenantOrganization.objects.filter(external_id="PRACE").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_write_phase_that_loses_a_deadlock_runs_again_from_the_start(api, monkeypatch):
    """PostgreSQL rolls back the transaction it picks as a deadlock's victim: the request is
    run again (network phase included; the aborted run's release actions ran), not answered
    500 — up to three runs, then the error stands."""
    from tests.support import urls

    networked: list[str] = []
    monkeypatch.setattr(urls, "probe_network", networked.append)
    urls.ABORTED.clear()
    urls.DEADLOCKS.update({"DEADLOCK1": 2, "DEADLOCK2": 3})
    rid = uuid.uuid4()
    response = api.call("post", PHASED, {"itemData": {"externalId": "DEADLOCK1"}}, request_id=rid)
    assert response.status_code == 201, response.content
    assert networked == ["DEADLOCK1"] * 3 and urls.ABORTED == ["DEADLOCK1"] * 2
    assert TenantOrganization.objects.filter(external_id="DEADLOCK1").count() == 1
    assert IdempotencyRecord.objects.filter(request_id=rid).count() == 1

    gives_up = api.call("post", PHASED, {"itemData": {"externalId": "DEADLOCK2"}}, request_id=uuid.uuid4())
    assert gives_up.status_code >= 500
    assert not TenantOrganization.objects.filter(external_id="DEADLOCK2").exists()
