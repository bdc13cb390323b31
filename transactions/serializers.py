from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer, StrictCharField, StrictSerializer, StrictUUIDField
from ledger_project.timestamps import timestamp_text


class TransactionResultOutput(serializers.Serializer):
    """Spec "Transaction result"."""

    success = serializers.SerializerMethodField()
    offchainId = serializers.UUIDField(source="offchain_id")
    status = serializers.CharField()
    onchainId = serializers.SerializerMethodField(help_text="The fee payer's signature; null while the transaction is held for approval (and after it was rejected).")
    confirmationsCount = serializers.IntegerField(source="confirmations_count", allow_null=True)
    serializedMessage = serializers.SerializerMethodField()
    errorMessage = serializers.CharField(source="error_message", allow_blank=True)
    txnTimestamp = serializers.SerializerMethodField()

    def get_success(self, tx) -> bool:
        return tx.status not in ("FAILED", "EXPIRED", "CANCELLED")

    def get_onchainId(self, tx) -> str | None:
        # Not disclosed while held for approval: with the message, a transaction whose only
        # signer is its fee payer (a source paying its own fee) could be sent by anyone, and
        # the approval bypassed. A rejected one stays undisclosed (its blockhash may still
        # be valid). Released on approval.
        return None if tx.approval_required else tx.onchain_id

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


class TransactionDecisionItem(StrictSerializer):
    """Approve / Reject Transaction: the held transaction and, optionally, why."""

    transaction = TransactionIdentifier()
    reason = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=1000, help_text="Recorded with the decision (TransactionApproval); a rejection's reason is also the transaction's errorMessage.")


class TransactionDecisionInput(EnvelopeSerializer):
    itemData = TransactionDecisionItem()
