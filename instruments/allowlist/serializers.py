"""Allow-list request and response shapes (our extension of the spec: docs/instruments.md,
"Allow-list"). Inputs validate types only; the rules live in services.py."""

from __future__ import annotations

from rest_framework import serializers

from accounts.serializers import IdentifiersOut
from ledger_project.api.envelope import (
    EnvelopeSerializer,
    InstrumentLookupSerializer,
    LookupSerializer,
    OwnInstrumentLookupSerializer,
    StrictIntegerField,
    StrictSerializer,
    TransactionEnvelopeSerializer,
)
from transactions.serializers import TransactionResultOutput

from .chain import MAX_CAPACITY

MAX_OWNERS = MAX_CAPACITY


class InitializeAllowListItem(StrictSerializer):
    financialInstrument = OwnInstrumentLookupSerializer()
    capacity = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_CAPACITY, help_text=f"Owners the list can hold, fixed at creation (default {MAX_CAPACITY}).")
    authority = LookupSerializer(required=False, allow_null=True, help_text="Who adds and removes owners (default: the transfer hook authority, else the mint authority).")
    mintAuthority = LookupSerializer(required=False, allow_null=True, help_text="The mint authority (it signs the initialization); when given, it must be the recorded one.")


class InitializeAllowListInput(TransactionEnvelopeSerializer):
    itemData = InitializeAllowListItem()


class ChangeAllowListItem(StrictSerializer):
    financialInstrument = OwnInstrumentLookupSerializer()
    owners = serializers.ListField(child=LookupSerializer(), min_length=1, max_length=MAX_OWNERS, help_text="Account lookups; an address the service does not know with offPlatform: true.")
    authority = LookupSerializer(required=False, allow_null=True, help_text="The allow-list's authority; when given, it must be the one on chain.")


class ChangeAllowListInput(TransactionEnvelopeSerializer):
    itemData = ChangeAllowListItem()


class AllowListPageSerializer(StrictSerializer):
    limit = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_CAPACITY)
    skip = StrictIntegerField(required=False, allow_null=True, min_value=0)


class FetchAllowListItem(StrictSerializer):
    financialInstrument = InstrumentLookupSerializer()


class FetchAllowListInput(EnvelopeSerializer):
    itemData = FetchAllowListItem()
    itemQuery = AllowListPageSerializer(required=False, allow_null=True, help_text="Paging over the owners in list order: limit (default 100, at most 256), skip.")


class AllowListIdentifiersOut(serializers.Serializer):
    onchainId = serializers.CharField(help_text='The allow-list account: PDA ["allow-list", mint] of the hook program.')
    financialInstrument = IdentifiersOut()


class InitializeAllowListOutput(serializers.Serializer):
    initializedAllowList = AllowListIdentifiersOut()
    svmTransaction = TransactionResultOutput()


class ChangeAllowListOutput(serializers.Serializer):
    allowList = AllowListIdentifiersOut()
    svmTransactions = TransactionResultOutput(many=True, help_text="In order; together they carry one instruction per owner.")


class AllowListAddressOut(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True, help_text="The organization's account at this address, if any.")


class AllowListOutput(serializers.Serializer):
    allowList = AllowListIdentifiersOut()
    initialized = serializers.BooleanField()
    authority = AllowListAddressOut(allow_null=True)
    capacity = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField(help_text="Owners on the list (all pages).")
    items = AllowListAddressOut(many=True)
