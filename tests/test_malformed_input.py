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
