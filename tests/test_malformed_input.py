"""Bad input always gets a clear 4xx in the error shape, on every endpoint, and changes nothing."""

from __future__ import annotations

import pytest

from accounts.models import Account
from conftest import assert_error
from tests.test_tenancy_matrix import ENDPOINTS

JUNK = [
    [],
    "text",
    5,
    {"itemData": []},
    {"itemData": "x"},
    {"itemData": 7},
    {"itemData": {"onchainId": 5}},
    {"itemData": {"offchainId": "not-a-uuid"}},
    {"itemData": {"account": "x"}},
    {"itemData": {"account": {"onchainId": ["a"]}}},
    {"itemData": {"offchainReferences": "x"}},
    {"itemData": {"transaction": []}},
    {"tenancyConfig": "x"},
    {"tenancyConfig": {"overrideOrganizationExternalId": ["x"]}},
    {"svmTransactionConfig": {"computeUnitConfig": {"limit": -1}}},
    {"itemQuery": {"limit": "all"}},
    {"itemQuery": {"filter": [{"fieldName": "type", "filterValues": "x"}]}},
    {"itemData": {"seed": {"lamports": -5}}},
    {"itemData": {"managed": "yes"}},
    {"itemData": {"dataLength": 10**12}},
    {"unexpected": True},
]


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_junk_bodies_are_4xx_in_error_shape(api, localnet_url, method, path, body):
    before = Account.unscoped.count()
    for junk in JUNK:
        response = api.call(method, path, junk)
        assert 400 <= response.status_code < 500, (junk, response.status_code, response.content[:300])
        assert_error(response, response.status_code)
    raw = api.generic(method.upper(), path, b"\xff\xfe{", content_type="application/json")
    assert_error(raw, 400)
    assert Account.unscoped.count() == before


# --- Limits (docs/api.md, Limits): before authentication, on every endpoint -------------
TOKEN = "/api/v1/auth/token"
EVERY = [(m, p) for m, p, _ in ENDPOINTS] + [("post", TOKEN)]
EVERY_IDS = [f"{m} {p}" for m, p in EVERY]


def _raw(client, method, path, body: bytes, **extra):
    return client.generic(method.upper(), path, body, content_type="application/json", **extra)


def _nested(depth: int) -> bytes:
    return b'{"itemData":' * depth + b"{}" + b"}" * depth


@pytest.mark.django_db
def test_a_30_mb_body_is_413_with_or_without_a_key(api, anon):
    body = b'{"itemData":"' + b"x" * (30 * 1024 * 1024) + b'"}'
    for client, path in ((anon, TOKEN), (anon, "/api/v1/accounts/bulk/detailed"), (api, "/api/v1/accounts/bulk/detailed")):
        assert_error(_raw(client, "post", path, body), 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.django_db
@pytest.mark.parametrize("method, path", EVERY, ids=EVERY_IDS)
def test_limits_answer_in_error_shape_before_authentication(anon, settings, method, path):
    settings.LEDGER_MAX_BODY_BYTES = 4096
    assert_error(_raw(anon, method, path, b'{"itemData":"' + b"x" * 5000 + b'"}'), 413, "PAYLOAD_TOO_LARGE")
    settings.LEDGER_MAX_BODY_BYTES = 1024 * 1024
    for depth in (settings.LEDGER_MAX_JSON_DEPTH, 950, 3000):  # depth + 1 levels with the innermost {}
        assert_error(_raw(anon, method, path, _nested(depth)), 400, "NESTING_TOO_DEEP")
    too_many = b'{"itemData":[' + b",".join([b"0"] * (settings.LEDGER_MAX_JSON_ARRAY_ITEMS + 1)) + b"]}"
    assert_error(_raw(anon, method, path, too_many), 400, "TOO_MANY_ITEMS", "itemData")
    for junk in (b"[null,null]", b'"x"', b"1", b"null", b"[]"):
        assert_error(_raw(anon, method, path, junk), 400, "INVALID_TYPE")
    for junk in (b'{"a": NaN}', b'{"a": 1e99999', b"{\"a\": \"\xff\"}"):
        assert_error(_raw(anon, method, path, junk), 400, "MALFORMED_JSON")


@pytest.mark.django_db
@pytest.mark.parametrize("junk", [b"[null,null]", b'"x"', b"1", b"[" * 2000 + b"]" * 2000])
def test_auth_token_with_a_non_object_body_is_400_not_500(anon, junk):
    response = _raw(anon, "post", TOKEN, junk)
    assert response.status_code == 400 and assert_error(response, 400)


@pytest.mark.django_db
def test_a_body_at_the_limits_is_accepted(api, settings):
    from ledger_project.api.parsers import parse_json_body

    deepest = _nested(settings.LEDGER_MAX_JSON_DEPTH - 1)  # exactly LEDGER_MAX_JSON_DEPTH levels
    assert parse_json_body(deepest)["itemData"]
    longest = b'{"a":[' + b",".join([b"0"] * settings.LEDGER_MAX_JSON_ARRAY_ITEMS) + b"]}"
    assert len(parse_json_body(longest)["a"]) == settings.LEDGER_MAX_JSON_ARRAY_ITEMS
    response = _raw(api, "post", "/api/v1/accounts/bulk/detailed", b'{"itemQuery":{"limit":5}}')
    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_free_form_metadata_has_documented_limits(api, tenant, settings, localnet_url):
    from instruments.tests.factories import FinancialInstrumentFactory

    instrument = FinancialInstrumentFactory(tenant=tenant, offchain_data={"description": "before"})
    lookup = {"onchainId": instrument.address}
    path = "/api/v1/financial-instruments"
    big = {"blob": "x" * (settings.LEDGER_MAX_METADATA_BYTES + 1)}
    assert_error(api.call("patch", path, {"itemData": {"mintAccount": lookup, "offchainData": {"complexCustomMetadata": big}}}), 400, "TOO_LARGE", "itemData.offchainData.complexCustomMetadata")
    many = {f"k{i}": {"v": i} for i in range(settings.LEDGER_MAX_METADATA_KEYS // 2 + 1)}
    assert_error(api.call("patch", path, {"itemData": {"mintAccount": lookup, "offchainData": {"simpleCustomMetadata": many}}}), 400, "TOO_MANY_KEYS", "itemData.offchainData.simpleCustomMetadata")
    instrument.refresh_from_db()
    assert instrument.offchain_data == {"description": "before"}
