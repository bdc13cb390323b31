"""Bodies and answers of the address lookup table endpoints (docs/lookup-tables.md)."""

from __future__ import annotations

from rest_framework import serializers

from ledger_project.api.envelope import (
    AddressField,
    EnvelopeSerializer,
    LookupSerializer,
    OwnLookupSerializer,
    StrictSerializer,
    StrictUUIDField,
    TransactionEnvelopeSerializer,
)
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer

from chain.lookup_tables import MAX_ADDRESSES
from transactions.serializers import TransactionResultOutput

from .models import LookupTableState

ACTIONS = ("FREEZE", "DEACTIVATE", "CLOSE")


class LookupTableLookupSerializer(StrictSerializer):
    """Names one of the organization's lookup tables: its address (onchainId) and/or its
    offchainId; both given must name the same table (404 CONFLICTING_LOOKUP)."""

    onchainId = AddressField(required=False, allow_null=True, help_text="The table's address.")
    offchainId = StrictUUIDField(required=False, allow_null=True)

    def validate(self, attrs):
        if not attrs.get("onchainId") and not attrs.get("offchainId"):
            raise serializers.ValidationError("A lookup table is named by onchainId or offchainId.", code="INVALID_LOOKUP")
        return attrs


def _components(**kwargs):
    return serializers.ListField(
        child=LookupSerializer(), max_length=MAX_ADDRESSES,
        help_text="Addresses to store, in order: accounts, positions' token accounts and instruments' mints (account lookups), or any address "
                  "as {onchainId, offPlatform: true}. No address twice, nor one the table holds (400 DUPLICATE_ADDRESS); at most 256 in the table "
                  "(400 LOOKUP_TABLE_FULL); as many as fit in one transaction (about 20; 400 TRANSACTION_TOO_LARGE).",
        **kwargs,
    )


class CreateLookupTableItem(StrictSerializer):
    authority = OwnLookupSerializer(required=False, allow_null=True, help_text="The organization's account that controls the table (signs extend, freeze, deactivate, close); default: a key the service generates and holds.")
    componentAddresses = _components(required=False, allow_null=True)


class CreateLookupTableInput(TransactionEnvelopeSerializer):
    itemData = CreateLookupTableItem()


class ExtendLookupTableItem(StrictSerializer):
    addressLookupTable = LookupTableLookupSerializer()
    componentAddresses = _components(min_length=1)


class ExtendLookupTableInput(TransactionEnvelopeSerializer):
    itemData = ExtendLookupTableItem()


class UpdateLookupTableItem(StrictSerializer):
    addressLookupTable = LookupTableLookupSerializer()
    action = serializers.ChoiceField(choices=ACTIONS, help_text="FREEZE: never changes again (still used by V0 messages). DEACTIVATE: no new transaction uses it. "
                                                                "CLOSE: after deactivation and the runtime's cool-down (400 LOOKUP_TABLE_COOLING_DOWN before), its rent to recipient.")
    recipient = LookupSerializer(required=False, allow_null=True, help_text="CLOSE only (400 CONFLICTING_FIELDS otherwise): who receives the rent; may be off platform. "
                                                                            "Default: the table's authority when it is an account of the organization.")


class UpdateLookupTableInput(TransactionEnvelopeSerializer):
    itemData = UpdateLookupTableItem()


class FetchLookupTableItem(StrictSerializer):
    addressLookupTable = LookupTableLookupSerializer()


class FetchLookupTableInput(EnvelopeSerializer):
    itemData = FetchLookupTableItem()


class BulkLookupTablesInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


# --- answers -------------------------------------------------------------------------------


class LookupTableIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(help_text="The table's address.")
    offchainId = serializers.UUIDField()


class LookupTableAccountOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True, help_text="The organization's account, when the authority is one; null for a key the service holds.")


class LookupTableTransactionOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()


class LookupTableOutput(serializers.Serializer):
    """An address lookup table (detail level ``detailed``; Fetch Address Lookup Table Details)."""

    onchainId = serializers.CharField(help_text="The table's address.")
    offchainId = serializers.UUIDField()
    state = serializers.ChoiceField(choices=LookupTableState.choices)
    authority = LookupTableAccountOutput(allow_null=True, help_text="null once frozen (the table has no authority on chain).")
    addresses = serializers.ListField(child=serializers.CharField(), help_text="The addresses stored on chain, in table order (index = position), as of the last confirmed change.")
    addressesCount = serializers.IntegerField()
    lastExtendedSlot = serializers.IntegerField(allow_null=True)
    deactivationSlot = serializers.IntegerField(allow_null=True)
    createdAt = serializers.CharField(help_text="ISO 8601, UTC, milliseconds.")
    closedAt = serializers.CharField(allow_null=True)
    lastTransaction = LookupTableTransactionOutput(allow_null=True, help_text="The table's latest transaction (the one in flight, while a change is).")


class LookupTableCompactOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    state = serializers.ChoiceField(choices=LookupTableState.choices)
    addressesCount = serializers.IntegerField()


BulkLookupTablesOutput = bulk_output("BulkLookupTablesOutput", LookupTableOutput)
BulkLookupTablesCompactOutput = bulk_output("BulkLookupTablesCompactOutput", LookupTableCompactOutput)
BulkLookupTablesIdentifiersOutput = bulk_output("BulkLookupTablesIdentifiersOutput", LookupTableIdentifiersOutput)


def _mutation_output(name: str, component: str):
    return type(component, (serializers.Serializer,), {
        name: LookupTableIdentifiersOutput(), "svmTransactionResult": TransactionResultOutput(), "__module__": __name__,
    })


CreateLookupTableOutput = _mutation_output("newAddressLookupTable", "CreateLookupTableOutput")
ExtendLookupTableOutput = _mutation_output("extendedAddressLookupTable", "ExtendLookupTableOutput")
UpdateLookupTableOutput = _mutation_output("updatedAddressLookupTable", "UpdateLookupTableOutput")
