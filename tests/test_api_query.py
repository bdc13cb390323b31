"""itemQuery → ORM (ledger_project.api.query), on a real table."""

import pytest

from ledger_project.api.errors import LedgerError
from ledger_project.api.query import ItemQuerySerializer, QueryField, QuerySpec, apply_item_query
from tenancy.models import TenantOrganization

SPEC = QuerySpec(
    fields={
        "externalId": QueryField("TEXT", "external_id"),
        "name": QueryField("TEXT", "name", nullable=True),
        "active": QueryField("BOOLEAN", "is_active"),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "number": QueryField("NUMBER", "pk"),
    },
    default_sort=(("externalId", "DESC"),),
    max_limit=5,
)
pytestmark = pytest.mark.django_db


@pytest.fixture
def orgs(db):
    return [TenantOrganization.objects.create(external_id=f"Q{i}", name=f"org {i % 3}", is_active=i % 2 == 0) for i in range(8)]


def run(query):
    serializer = ItemQuerySerializer(data=query)
    assert serializer.is_valid(), serializer.errors
    page, count = apply_item_query(TenantOrganization.objects.filter(external_id__startswith="Q"), serializer.validated_data, SPEC)
    return [o.external_id for o in page], count


def test_default_sort_and_limit(orgs):
    ids, count = run({})
    assert count == 8 and ids == ["Q7", "Q6", "Q5", "Q4", "Q3"]


def test_equals_boolean_and_text(orgs):
    ids, count = run({"filter": [{"fieldName": "active", "operator": "AND", "filterValues": [{"dataType": "BOOLEAN", "filterType": "EQUALS", "valueBoolean": True}]},
                                 {"fieldName": "name", "filterValues": [{"dataType": "TEXT", "valueString": "org 0"}]}],
                      "sort": [{"fieldName": "externalId", "sortDirection": "ASC"}]})
    assert ids == ["Q0", "Q6"] and count == 2


def test_in_range_skip(orgs):
    ids, _ = run({"filter": [{"fieldName": "externalId", "filterValues": [{"dataType": "TEXT", "filterType": "IN", "valuesString": ["Q1", "Q2", "Q3"]}]}],
                  "sort": [{"fieldName": "externalId", "sortDirection": "ASC"}], "skip": 1, "limit": 1})
    assert ids == ["Q2"]
    low, high = orgs[2].pk, orgs[4].pk
    ids, count = run({"filter": [{"fieldName": "number", "filterValues": [{"dataType": "NUMBER", "filterType": "RANGE", "valueFromNumber": low, "valueToNumber": high}]}]})
    assert count == 3


def test_or_operator_combines_values(orgs):
    _, count = run({"filter": [{"fieldName": "externalId", "operator": "OR", "filterValues": [{"dataType": "TEXT", "valueString": "Q1"}, {"dataType": "TEXT", "valueString": "Q2"}]}]})
    assert count == 2


@pytest.mark.parametrize(
    "query, field",
    [
        ({"filter": [{"fieldName": "nope", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}]}, "itemQuery.filter[0].fieldName"),
        ({"filter": [{"fieldName": "active", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}]}, "itemQuery.filter[0].filterValues[0].dataType"),
        ({"filter": [{"fieldName": "active", "filterValues": [{"dataType": "BOOLEAN", "filterType": "IS_NULL"}]}]}, "itemQuery.filter[0].filterValues[0].filterType"),
        ({"filter": [{"fieldName": "offchainId", "filterValues": [{"dataType": "OFFCHAIN_ID", "valueString": "zz"}]}]}, "itemQuery.filter[0].filterValues[0].valueString"),
        ({"sort": [{"fieldName": "nope"}]}, "itemQuery.sort[0].fieldName"),
        ({"limit": 6}, "itemQuery.limit"),
    ],
)
def test_bad_queries_are_400_naming_the_field(orgs, query, field):
    serializer = ItemQuerySerializer(data=query)
    assert serializer.is_valid(), serializer.errors
    with pytest.raises(LedgerError) as err:
        apply_item_query(TenantOrganization.objects.all(), serializer.validated_data, SPEC)
    assert err.value.field == field and err.value.status_code == 400


def test_is_null_on_nullable(orgs):
    _, count = run({"filter": [{"fieldName": "name", "filterValues": [{"dataType": "TEXT", "filterType": "IS_NOT_NULL"}]}]})
    assert count == 8
