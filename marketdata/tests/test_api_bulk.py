"""Fetch Oracle Data Sources: itemQuery over the organization's own sources (instrument,
kind, authority, last update time, …) at three detail levels (records only)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from conftest import assert_error
from marketdata.models import OnchainDataSource

from .factories import make_evaluation, make_source
from .kit import call, parsed

pytestmark = pytest.mark.django_db


def _page(api, level: str = "detailed", **query) -> dict:
    response = call(api, "post", f"/bulk/{level}", itemQuery=query)
    assert response.status_code == 200, response.json()
    return parsed(response)


def _text(name: str, value: str, data_type: str = "TEXT") -> dict:
    return {"fieldName": name, "filterValues": [{"dataType": data_type, "valueString": value}]}


@pytest.fixture
def sources(tenant, other_tenant):
    now = timezone.now()
    priced = make_source(tenant, onchain_round=3, onchain_value=Decimal(12_345_000_000), onchain_updated_at=now - timedelta(hours=2), synced_slot=40)
    fresh = make_source(tenant, onchain_round=9, onchain_value=Decimal(1), onchain_updated_at=now, synced_slot=90)
    never = make_source(tenant, status="PENDING")
    OnchainDataSource.unscoped.filter(pk=fresh.pk).update(last_evaluation=make_evaluation(fresh, mantissa=1, round=9))
    make_source(other_tenant)  # never listed
    return priced, fresh, never


def test_every_detail_level_lists_only_the_organizations_sources(api, sources):
    priced, fresh, never = sources
    page = _page(api)
    assert page["count"] == 3 and [i["offchainId"] for i in page["items"]] == [str(s.offchain_id) for s in (never, fresh, priced)]  # newest first
    item = next(i for i in page["items"] if i["offchainId"] == str(priced.offchain_id))
    assert item["onchainValue"] == {"readFrom": "RECORD", "readAtSlot": 40, "round": 3, "value": Decimal("123.45"), "mantissa": 12_345_000_000, "exponent": -8,
                                    "observedAt": None, "updatedAt": item["lastUpdateAt"], "slot": None, "jobHash": ""}
    assert item["financialInstrument"]["onchainId"] == priced.instrument.address and item["dataDetails"]["kind"] == "PRICE"
    assert next(i for i in page["items"] if i["offchainId"] == str(never.offchain_id))["onchainValue"] is None
    assert next(i for i in page["items"] if i["offchainId"] == str(fresh.offchain_id))["lastEvaluation"]["status"] == "CONFIRMED"
    compact = _page(api, "compact")["items"]
    assert {c["offchainId"]: (c["value"], c["round"]) for c in compact}[str(priced.offchain_id)] == (Decimal("123.45"), 3)
    assert _page(api, "identifiers")["items"][0] == {"onchainId": never.address, "offchainId": str(never.offchain_id)}


def test_filters_by_instrument_kind_authority_and_last_update_time(api, sources):
    priced, fresh, never = sources
    only = lambda page: [i["offchainId"] for i in page["items"]]  # noqa: E731
    assert only(_page(api, "identifiers", filter=[_text("financialInstrumentOnchainId", priced.instrument.address, "ONCHAIN_ADDRESS_ID")])) == [str(priced.offchain_id)]
    assert only(_page(api, "identifiers", filter=[_text("financialInstrumentAlId", fresh.instrument.al_id)])) == [str(fresh.offchain_id)]
    assert _page(api, "identifiers", filter=[_text("kind", "PRICE")])["count"] == 3
    assert only(_page(api, "identifiers", filter=[_text("authorityOnchainId", never.authority_address, "ONCHAIN_ADDRESS_ID")])) == [str(never.offchain_id)]
    assert only(_page(api, "identifiers", filter=[{"fieldName": "authorityOffchainId", "filterValues": [
        {"dataType": "OFFCHAIN_ID", "valueString": str(priced.authority_account.offchain_id)}]}])) == [str(priced.offchain_id)]
    hour_ago = (timezone.now() - timedelta(hours=1)).isoformat()
    recent = {"fieldName": "lastUpdateAt", "filterValues": [{"dataType": "TIMESTAMP", "filterType": "RANGE", "valueFromString": hour_ago}]}
    assert only(_page(api, "identifiers", filter=[recent])) == [str(fresh.offchain_id)]
    never_updated = {"fieldName": "lastUpdateAt", "filterValues": [{"dataType": "TIMESTAMP", "filterType": "IS_NULL"}]}
    assert only(_page(api, "identifiers", filter=[never_updated])) == [str(never.offchain_id)]
    by_update = _page(api, "identifiers", sort=[{"fieldName": "lastUpdateAt", "sortDirection": "ASC"}, {"fieldName": "round", "sortDirection": "ASC"}])
    # (where a null sorts depends on the database: PostgreSQL last, SQLite first)
    assert [i for i in only(by_update) if i != str(never.offchain_id)] == [str(priced.offchain_id), str(fresh.offchain_id)]


def test_a_bad_query_is_a_400_naming_it(api, sources):
    assert_error(call(api, "post", "/bulk/detailed", itemQuery={"filter": [_text("price", "1")]}), 400, "UNKNOWN_FIELD_NAME", "itemQuery.filter[0].fieldName")
    assert_error(call(api, "post", "/bulk/detailed", itemQuery={"filter": [_text("lastUpdateAt", "yesterday")]}), 400, "INVALID_DATA_TYPE")
    assert_error(call(api, "post", "/bulk/everything"), 400, "INVALID_ENUM", "detail-level")
