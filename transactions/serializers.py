from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer, StrictCharField, StrictSerializer, StrictUUIDField
from ledger_project.timestamps import timestamp_text


class TransactionResultOutput(serializers.Serializer):
    """Spec "Transaction result"."""

    success = serializers.SerializerMethodField()
    offchainId = serializers.UUIDField(source="offchain_id")
    status = serializers.CharField()
    onchainId = serializers.CharField(source="onchain_id", allow_null=True)
    confirmationsCount = serializers.IntegerField(source="confirmations_count", allow_null=True)
    serializedMessage = serializers.SerializerMethodField()
    errorMessage = serializers.CharField(source="error_message", allow_blank=True)
    txnTimestamp = serializers.SerializerMethodField()

    def get_success(self, tx) -> bool:
        return tx.status not in ("FAILED", "EXPIRED", "CANCELLED")

    def get_serializedMessage(self, tx) -> str:
        import base64

        return base64.b64encode(bytes(tx.message)).decode()

    def get_txnTimestamp(self, tx) -> str:
        return timestamp_text(tx.txn_timestamp)


class TransactionIdentifier(StrictSerializer):
    onchainId = StrictCharField(required=False, allow_null=True, max_length=100)
    offchainId = StrictUUIDField(required=False, allow_null=True)

    def validate(self, attrs):
        if not attrs.get("onchainId") and not attrs.get("offchainId"):
            raise serializers.ValidationError({"onchainId": [serializers.ErrorDetail("Give onchainId or offchainId.", code="required")]})
        return attrs


class TransactionStatusItem(StrictSerializer):
    transaction = TransactionIdentifier()


class TransactionStatusInput(EnvelopeSerializer):
    itemData = TransactionStatusItem()
