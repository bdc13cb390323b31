"""Serializers for the body envelope every endpoint shares (spec: Shared request parts).

``StrictSerializer`` refuses keys it does not declare, so a misspelt field is a 400 that
names it instead of being silently ignored.
"""

from __future__ import annotations

from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: [serializers.ErrorDetail("Unknown field.", code="unknown_field")] for name in unknown})
        return super().to_internal_value(data)


class TenancyConfigSerializer(StrictSerializer):
    overrideOrganizationExternalId = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=64)


class EnvelopeSerializer(StrictSerializer):
    """Base of every request body: subclasses declare itemData (and svmTransactionConfig)."""

    tenancyConfig = TenancyConfigSerializer(required=False, allow_null=True)


class IdentifiersSerializer(serializers.Serializer):
    """``{onchainId, offchainId}`` as mutating responses name a record."""

    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()
