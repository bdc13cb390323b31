from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer, LookupSerializer, StrictBooleanField, StrictCharField, StrictSerializer, StrictUUIDField
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer
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


# --- Sign Transaction, Submit Transaction (docs/transactions.md, "Sign Transaction and Submit Transaction")


@extend_schema_field({"type": "string", "pattern": "^[0-9a-f]{64}$"})
class HexScalarField(serializers.RegexField):
    """32 bytes as lowercase hex (a FROST signature share)."""

    def __init__(self, **kwargs):
        super().__init__(r"^[0-9a-f]{64}$", max_length=64, **kwargs)


class DkgPartialSignature(StrictSerializer):
    mpcPlayerCode = StrictCharField(max_length=64, help_text="The external player whose share this is (backend players sign by themselves).")
    partialSignature = HexScalarField(help_text="The player's signature share: 32 bytes, lowercase hex (signatureShare of its frost-signature-share).")


class DkgSigning(StrictSerializer):
    """Threshold signing (docs/threshold-signing.md): partial signatures of the external
    players of a signing session of this transaction and account."""

    partialSignatures = serializers.ListField(child=DkgPartialSignature(), min_length=1, max_length=64)
    sessionId = StrictCharField(max_length=200, help_text="The signing session (POST /api/v1/transactions/dkg/open).")


class OffPlatformSignature(StrictSerializer):
    """One signature made off platform: the signer's account and its signature of the
    transaction's serializedMessage (base58, as Keypair.sign_message gives it)."""

    account = LookupSerializer(help_text="The signer: an account of the lookup rules, or an address the service does not record with offPlatform: true.")
    signature = StrictCharField(required=False, allow_null=True, max_length=100, help_text=(
        "Base58 Ed25519 signature of the bytes of serializedMessage (400 INVALID_SIGNATURE when it does not verify, NOT_A_SIGNER when the account is not a signer)."))
    dkgSigning = DkgSigning(required=False, allow_null=True, help_text="A DKG account's partial signatures, instead of signature (docs/threshold-signing.md).")

    def validate(self, attrs):
        if not attrs.get("signature") and attrs.get("dkgSigning") is None:
            raise serializers.ValidationError({"signature": [serializers.ErrorDetail("Give the account's signature of serializedMessage.", code="required")]})
        if attrs.get("signature") and attrs.get("dkgSigning") is not None:
            raise serializers.ValidationError({"dkgSigning": [serializers.ErrorDetail("Give signature or dkgSigning, not both.", code="CONFLICTING_FIELDS")]})
        return attrs


class TransactionSignItem(StrictSerializer):
    transaction = TransactionIdentifier()
    offPlatformSigning = serializers.ListField(child=OffPlatformSignature(), required=False, allow_null=True, max_length=32)
    onPlatformSigning = serializers.ListField(
        child=LookupSerializer(), required=False, allow_null=True, max_length=32,
        help_text="Managed accounts whose keys sign here: this organization's, or shared ones naming it in orgsAllowedToSignWithPrivateKey, whose debit API keys (when set) name the calling key (403 SIGNER_NOT_ALLOWED otherwise).",
    )
    submitTxnIfAllSignaturesCollected = StrictBooleanField(
        required=False, allow_null=True,
        help_text="Default true: once this call collects the last signature the transaction is submitted. false: collected only (status SIGNED, held); Submit Transaction sends it.",
    )


class TransactionSignInput(EnvelopeSerializer):
    itemData = TransactionSignItem()


class TransactionSubmitItem(StrictSerializer):
    transaction = TransactionIdentifier()


class TransactionSubmitInput(EnvelopeSerializer):
    itemData = TransactionSubmitItem()


class TransactionWithdrawItem(StrictSerializer):
    """Withdraw Transaction (our extension of the spec): the PARTIALLY_SIGNED transaction and, optionally, why."""

    transaction = TransactionIdentifier()
    reason = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=1000, help_text="Recorded with the withdrawal (event WITHDRAWN) and in the transaction's errorMessage.")


class TransactionWithdrawInput(EnvelopeSerializer):
    itemData = TransactionWithdrawItem()
# --- Fetch Transaction Details / Fetch Transactions (docs/transactions.md) -----------------
# The schema of transactions/details.py's dicts (written directly for speed; a test keeps
# the two in step).


class TransactionDetailsInput(EnvelopeSerializer):
    itemData = TransactionStatusItem()


class AccountKeyOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True, help_text="The address; null for one loaded from a lookup table while the transaction's record is not known yet.")
    signer = serializers.BooleanField()
    writable = serializers.BooleanField(help_text="As the message declares it (a key invoked as a program is never writable).")
    lookupTable = serializers.CharField(allow_null=True, help_text="V0: the lookup table it is loaded from; null for a static key.")
    lookupTableIndex = serializers.IntegerField(allow_null=True)


class InstructionAccountOutput(AccountKeyOutput):
    role = serializers.CharField(allow_null=True, help_text="Its role in the instruction (jsonParsed names: source, mint, authority, …); null when not known.")


class InstructionOutput(serializers.Serializer):
    index = serializers.IntegerField()
    programId = serializers.CharField()
    programName = serializers.CharField(allow_null=True, help_text="system, spl-token, spl-token-2022, spl-associated-token-account, address-lookup-table, compute-budget, spl-memo; null for other programs.")
    instructionType = serializers.CharField(allow_null=True, help_text="The decoded instruction (jsonParsed names: transfer, transferChecked, createAccount, …); null when not decoded.")
    accounts = InstructionAccountOutput(many=True)
    data = serializers.DictField(allow_null=True, help_text="Decoded fields (lamports as integers, token amounts as strings); null when not decoded.")
    rawData = serializers.CharField(help_text="The instruction data, base64.")


class AddressTableLookupOutput(serializers.Serializer):
    onchainId = serializers.CharField(help_text="The lookup table's address.")
    writableIndexes = serializers.ListField(child=serializers.IntegerField())
    readonlyIndexes = serializers.ListField(child=serializers.IntegerField())


class RequiredSignerOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    signed = serializers.BooleanField(help_text="Whether its signature is collected.")


class OperationRecordOutput(serializers.Serializer):
    type = serializers.ChoiceField(choices=["ACCOUNT", "FINANCIAL_INSTRUMENT", "POSITION"])
    offchainId = serializers.UUIDField()


class TransactionDetailsOutput(TransactionResultOutput):
    """Fetch Transaction Details: the transaction result and the transaction itself."""

    cluster = serializers.CharField()
    operation = serializers.CharField(help_text="The API operation that created it, e.g. accounts.create.")
    operationRecords = OperationRecordOutput(many=True, help_text="The records that operation created or changed, as its effects name them.")
    createdByKey = serializers.CharField(allow_null=True, help_text="The keyId of the API key that requested it.")
    transactionVersion = serializers.ChoiceField(choices=["V0", "LEGACY"])
    messageLifetimeStrategy = serializers.ChoiceField(choices=["RECENT_BLOCKHASH", "DURABLE_NONCE"])
    recentBlockhash = serializers.CharField(help_text="The blockhash, or for DURABLE_NONCE the nonce value, the message carries.")
    lastValidBlockHeight = serializers.IntegerField(allow_null=True)
    nonceAccount = serializers.CharField(allow_null=True)
    commitmentLevel = serializers.CharField()
    feePayer = serializers.CharField()
    requiredSigners = RequiredSignerOutput(many=True)
    accounts = AccountKeyOutput(many=True, help_text="Static keys, then (V0) those loaded from lookup tables: writable, then read-only.")
    addressTableLookups = AddressTableLookupOutput(many=True)
    instructions = InstructionOutput(many=True)
    fee = serializers.IntegerField(allow_null=True, help_text="Lamports paid; null until landed and read.")
    computeUnitsConsumed = serializers.IntegerField(allow_null=True)
    logMessages = serializers.ListField(child=serializers.CharField(), allow_null=True)
    slot = serializers.IntegerField(allow_null=True)
    blockTime = serializers.DateTimeField(allow_null=True)
    submittedAt = serializers.DateTimeField(allow_null=True)
    confirmedAt = serializers.DateTimeField(allow_null=True)
    finalizedAt = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_null=True, help_text="The chain's error, for a failed transaction.")


class TransactionIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True, help_text="Null while held for approval, like the transaction result's.")
    offchainId = serializers.UUIDField()


class TransactionBulkInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


BulkTransactionsOutput = bulk_output("BulkTransactionsOutput", TransactionDetailsOutput, "Detail level `detailed`.")
BulkTransactionsCompactOutput = bulk_output("BulkTransactionsCompactOutput", TransactionResultOutput)
BulkTransactionsIdentifiersOutput = bulk_output("BulkTransactionsIdentifiersOutput", TransactionIdentifiersOutput)
