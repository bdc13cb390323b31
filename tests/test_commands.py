"""The spec's JSON stops at the door (ledger_project/api/commands.py): commands built from a
serializer's data, Python field paths mapped to the request's, and the door doing it for
every operation (tenancy/endpoints.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from rest_framework import serializers

from chain.errors import ChainError
from ledger_project.api.commands import UNSET, camel, command, spec_path
from ledger_project.api.envelope import StrictSerializer, TransactionEnvelopeSerializer
from ledger_project.api.errors import LedgerError, ValidationFailed
from tenancy.endpoints import request_fields


@dataclass(frozen=True)
class Leg:
    amount: str
    memo: str | None = None


@dataclass(frozen=True)
class Details:
    job_definition: str | None = None
    refresh_interval_seconds: int | None = UNSET


@dataclass(frozen=True)
class Order:
    partner_details: Details
    legs: list[Leg] = field(default_factory=list)
    al_id: str | None = field(default=None, metadata={"spec": "alID"})
    note: Details | None = None


class LegSerializer(StrictSerializer):
    amount = serializers.CharField()
    memo = serializers.CharField(required=False)


class DetailsSerializer(StrictSerializer):
    jobDefinition = serializers.CharField(required=False)
    refreshIntervalSeconds = serializers.IntegerField(required=False, allow_null=True)


class OrderItem(StrictSerializer):
    partnerDetails = DetailsSerializer()
    legs = LegSerializer(many=True, required=False)
    alID = serializers.CharField(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)


class OrderInput(TransactionEnvelopeSerializer):
    itemData = OrderItem()


class BatchInput(TransactionEnvelopeSerializer):
    itemData = OrderItem(many=True)


def test_camel():
    assert camel("partner_oracle_details") == "partnerOracleDetails"
    assert camel("status") == "status"


def test_a_command_from_validated_data():
    order = command(Order, {"partnerDetails": {"jobDefinition": "{}"}, "legs": [{"amount": "1"}, {"amount": "2", "memo": "m"}], "alID": "X"})
    assert order == Order(Details("{}"), [Leg("1"), Leg("2", "m")], "X")
    assert order.partner_details.refresh_interval_seconds is UNSET  # left out
    assert command(Details, {"refreshIntervalSeconds": None}).refresh_interval_seconds is None  # null given
    assert command(Order, {"partnerDetails": {}, "note": None}).note is None
    assert command(Order, None) is None
    assert not UNSET and repr(UNSET) == "UNSET"


def test_a_key_the_command_lacks_is_a_programming_error():
    with pytest.raises(TypeError, match="no field for dataSourceKind"):
        command(Details, {"dataSourceKind": "PRICE"})


@pytest.mark.parametrize("path, expected", [
    ("partner_details.job_definition", "itemData.partnerDetails.jobDefinition"),  # a command's path, under itemData
    ("partner_details.job_definition.tasks[1].httpTask.url", "itemData.partnerDetails.jobDefinition.tasks[1].httpTask.url"),  # inside a value
    ("legs[2].memo", "itemData.legs[2].memo"),
    ("al_id", "al_id"),  # not a field the serializer names (its spec name is alID): as given
    ("alID", "itemData.alID"),
    ("itemData.partnerDetails.refreshIntervalSeconds", "itemData.partnerDetails.refreshIntervalSeconds"),  # a request path: itself
    ("svm_transaction_config.fee_payer", "svmTransactionConfig.feePayer"),  # the body's own fields
    ("svmTransactionConfig.addressLookupTables[0]", "svmTransactionConfig.addressLookupTables[0]"),
    ("tags[0]", "itemData.tags[0]"),
    ("svmCluster", "svmCluster"),  # a query parameter: not the body's
    ("itemData", "itemData"),
    (None, None),
    ("", ""),
    ("not a path!", "not a path!"),
])
def test_spec_path(path, expected):
    assert spec_path(OrderInput, path) == expected


def test_spec_path_of_a_batch_item():
    assert spec_path(BatchInput, "itemData[3].partner_details.job_definition") == "itemData[3].partnerDetails.jobDefinition"


def test_the_door_maps_every_kind_of_refusal():
    refused = LedgerError("no", field="partner_details.job_definition")
    request_fields(refused, OrderInput)
    assert refused.as_errors()[0]["field"] == "itemData.partnerDetails.jobDefinition"

    several = ValidationFailed([{"code": "A", "message": "a", "field": "legs[0].amount"}, {"code": "B", "message": "b", "field": None}])
    request_fields(several, OrderInput)
    assert [e["field"] for e in several.as_errors()] == ["itemData.legs[0].amount", None] and several.field == "itemData.legs[0].amount"

    chain = ChainError("refused", field="partner_details")
    request_fields(chain, OrderInput)
    assert chain.field == "itemData.partnerDetails"
    own = ChainError("too old", field="config.version")  # the chain's own path: tenancy/chain_errors.py maps it
    request_fields(own, OrderInput)
    assert own.field == "config.version"
