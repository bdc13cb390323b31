"""Market data API shapes (spec: "Market data"; docs/marketdata.md).

Create Onchain Data Source's body and answer are the spec's; the other operations' paths
and bodies are not shown there and follow its conventions: ``itemData`` with the data
source named by ``onchainDataSource`` (a lookup), ``svmTransactionConfig`` and
``tenancyConfig`` beside it; mutating answers ``{<name>: {onchainId, offchainId},
svmTransaction}``. Ours beyond the spec: partnerOracleDetails.exponent,
maxStalenessSeconds and refreshIntervalSeconds; status on Update.
"""

from __future__ import annotations

from rest_framework import serializers

from ledger_project.api.envelope import (
    AddressField,
    EnvelopeSerializer,
    InstrumentLookupSerializer,
    LookupSerializer,
    OwnLookupSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    StrictUUIDField,
    TransactionEnvelopeSerializer,
)
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer
from marketdata.jobs.limits import MAX_DEFINITION_BYTES
from programs.price_feed.abi import MAX_STALENESS_LIMIT
from transactions.serializers import TransactionResultOutput

from .models import DATA_KINDS, DEFI_PROTOCOL, MAX_EXPONENT, MIN_EXPONENT, ORACLE_KINDS, SETTABLE_STATUSES, DataSourceStatus, EvaluationStatus, EvaluationTrigger

MAX_REFRESH_SECONDS = 31 * 86_400


class DataSourceLookupSerializer(StrictSerializer):
    """Names one of the organization's data sources: its feed account (onchainId) and/or
    its offchainId; both given must name the same source (404 CONFLICTING_LOOKUP)."""

    onchainId = AddressField(required=False, allow_null=True, help_text="The feed account.")
    offchainId = StrictUUIDField(required=False, allow_null=True)

    def validate(self, attrs):
        if not attrs.get("onchainId") and not attrs.get("offchainId"):
            raise serializers.ValidationError("A data source is named by onchainId or offchainId.", code="INVALID_LOOKUP")
        return attrs


def _job_definition(**kwargs):
    return StrictCharField(
        trim_whitespace=False, max_length=MAX_DEFINITION_BYTES,
        help_text="The job (docs/marketdata.md, \"Job definitions\"): a JSON object {\"tasks\": [...]} as a string — httpTask, jsonParseTask, valueTask, "
                  "multiplyTask, divideTask, medianTask, meanTask. Validated when saved: 400 INVALID_JOB_DEFINITION (or URL_NOT_ALLOWED) whose field is "
                  "the bad task's path, e.g. itemData.partnerOracleDetails.jobDefinition.tasks[0].medianTask.jobs[1].tasks[0].httpTask.url.", **kwargs)


def _refresh_interval(**kwargs):
    return StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_REFRESH_SECONDS, help_text=(
        "Seconds between scheduled refreshes (the source's periodic task, which operators also see and change in the admin); null: refreshed on demand "
        "only. Create's default: LEDGER_MARKETDATA_DEFAULT_REFRESH_SECONDS (60)."), **kwargs)


class PartnerOracleDetailsSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=ORACLE_KINDS, help_text="QUOTES: the job yields a quote (a price).")
    jobDefinition = _job_definition()
    exponent = StrictIntegerField(required=False, min_value=MIN_EXPONENT, max_value=MAX_EXPONENT, help_text=(
        "The feed stores value × 10^-exponent as an integer: value = mantissa × 10^exponent (default -8). Fixed at creation; with alreadyOnchain, the feed's."))
    maxStalenessSeconds = StrictIntegerField(required=False, min_value=1, max_value=MAX_STALENESS_LIMIT, help_text=(
        "The feed refuses an update observed longer ago than this (default 300). Fixed at creation; with alreadyOnchain, the feed's."))
    refreshIntervalSeconds = _refresh_interval()


class DataDetailsSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=DATA_KINDS, required=False, help_text="PRICE (default). One ACTIVE data source per instrument and kind (409 DATA_SOURCE_EXISTS).")
    ratingProvider = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100, help_text="Who rates the data (free text).")


class CreateDataSourceItem(StrictSerializer):
    defiProtocol = serializers.ChoiceField(choices=[DEFI_PROTOCOL])
    partnerOracleDetails = PartnerOracleDetailsSerializer()
    alreadyOnchain = StrictBooleanField(required=False, default=False, help_text=(
        "Onboard the feed at existingOnchainDataSourceAccount (no transaction): it must be a price_feed feed of this instrument's mint whose job hash "
        "is this jobDefinition's and whose authority is a managed account of the organization."))
    existingOnchainDataSourceAccount = LookupSerializer(required=False, allow_null=True, help_text=(
        "With alreadyOnchain: the feed account, an account of the organization or any address as {onchainId, offPlatform: true}."))
    financialInstrument = InstrumentLookupSerializer(help_text="The instrument the feed prices (its mint is recorded in the feed).")
    oracleDataSourceAuthority = OwnLookupSerializer(required=False, allow_null=True, help_text=(
        "Signs the feed's updates and definition changes: a managed account of the organization (the service signs unattended; 400 AUTHORITY_NOT_MANAGED "
        "otherwise). Default: a key the service generates and holds (with alreadyOnchain: the feed's authority, an account of the organization)."))
    dataDetails = DataDetailsSerializer(required=False, allow_null=True)

    def validate(self, attrs):
        if attrs.get("alreadyOnchain") and not attrs.get("existingOnchainDataSourceAccount"):
            raise serializers.ValidationError({"existingOnchainDataSourceAccount": [serializers.ErrorDetail("alreadyOnchain names the feed to onboard here.", code="required")]})
        if attrs.get("existingOnchainDataSourceAccount") and not attrs.get("alreadyOnchain"):
            raise serializers.ValidationError({"existingOnchainDataSourceAccount": [serializers.ErrorDetail(
                "An existing feed is onboarded with alreadyOnchain: true; without it a new feed account is created.", code="CONFLICTING_FIELDS")]})
        return attrs


class CreateDataSourceInput(TransactionEnvelopeSerializer):
    itemData = CreateDataSourceItem()


class UpdatePartnerOracleDetailsSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=ORACLE_KINDS, required=False)
    jobDefinition = _job_definition(required=False)
    refreshIntervalSeconds = _refresh_interval()


class UpdateDataDetailsSerializer(StrictSerializer):
    ratingProvider = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)


class UpdateDataSourceItem(StrictSerializer):
    onchainDataSource = DataSourceLookupSerializer()
    partnerOracleDetails = UpdatePartnerOracleDetailsSerializer(required=False, help_text=(
        "A new jobDefinition is recorded on chain (SetJobHash signed by the authority) and evaluated once that transaction confirms; "
        "refreshIntervalSeconds changes the schedule at once."))
    dataDetails = UpdateDataDetailsSerializer(required=False)
    status = serializers.ChoiceField(choices=SETTABLE_STATUSES, required=False, help_text=(
        "INACTIVE: kept, no longer refreshed (another source of the instrument may then be created); ACTIVE again: 409 DATA_SOURCE_EXISTS when "
        "another is active meanwhile."))


class UpdateDataSourceInput(TransactionEnvelopeSerializer):
    itemData = UpdateDataSourceItem()


class DataSourceItem(StrictSerializer):
    onchainDataSource = DataSourceLookupSerializer()


class RefreshDataSourceInput(EnvelopeSerializer):
    """The update is signed by the feed's authority and its network fee paid by the
    platform's fee payer (the worker sends it): no svmTransactionConfig."""

    itemData = DataSourceItem()


class FetchDataSourceInput(EnvelopeSerializer):
    itemData = DataSourceItem()


class BulkDataSourcesInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


# --- answers -------------------------------------------------------------------------------
# Decimal values are JSON numbers written with every digit (LedgerJSONRenderer).


class DataSourceIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(help_text="The feed account.")
    offchainId = serializers.UUIDField()


class _Record(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True)


class _Address(serializers.Serializer):
    onchainId = serializers.CharField()


class _Transaction(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()


class _Instrument(serializers.Serializer):
    onchainId = serializers.CharField(help_text="The mint.")
    offchainId = serializers.UUIDField()
    alId = serializers.CharField(allow_null=True)


class OraclePartnerDetailsOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ORACLE_KINDS)
    jobDefinition = serializers.CharField(help_text="The job the feed states (its hash on chain); a new one takes effect once its SetJobHash confirms.")
    jobHash = serializers.CharField(help_text="SHA-256 (hex) of the definition's canonical JSON.")
    exponent = serializers.IntegerField()
    maxStalenessSeconds = serializers.IntegerField()
    refreshIntervalSeconds = serializers.IntegerField(allow_null=True, help_text="null: no enabled interval schedule (refreshed on demand).")


class DataDetailsOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=DATA_KINDS)
    ratingProvider = serializers.CharField(allow_null=True)


class RecentReadingOutput(serializers.Serializer):
    round = serializers.IntegerField()
    value = serializers.FloatField(help_text="mantissa × 10^exponent, every digit.")
    mantissa = serializers.IntegerField()
    observedAt = serializers.CharField(allow_null=True)
    slot = serializers.IntegerField()


class FeedOutput(serializers.Serializer):
    """The feed: read from the chain now (Fetch Onchain Data Source Details: readFrom CHAIN)
    or as the record copied it after its last confirmed change (bulk: readFrom RECORD)."""

    readFrom = serializers.ChoiceField(choices=["CHAIN", "RECORD"])
    readAtSlot = serializers.IntegerField(allow_null=True)
    round = serializers.IntegerField(help_text="The last accepted round (0: no reading yet).")
    value = serializers.FloatField(allow_null=True, help_text="mantissa × 10^exponent, every digit; null before the first reading.")
    mantissa = serializers.IntegerField()
    exponent = serializers.IntegerField()
    observedAt = serializers.CharField(allow_null=True, help_text="When the reading was observed (the updater's clock).")
    updatedAt = serializers.CharField(allow_null=True, help_text="The cluster's clock when the reading was accepted.")
    slot = serializers.IntegerField(allow_null=True)
    jobHash = serializers.CharField()
    authority = serializers.CharField(required=False, help_text="readFrom CHAIN only.")
    mint = serializers.CharField(required=False, help_text="readFrom CHAIN only.")
    maxStalenessSeconds = serializers.IntegerField(required=False, help_text="readFrom CHAIN only.")
    recent = RecentReadingOutput(many=True, required=False, help_text="readFrom CHAIN only: the feed's ring of recent readings, newest first.")


class SourceAnswerOutput(serializers.Serializer):
    path = serializers.CharField(help_text="The httpTask's place in the job.")
    url = serializers.CharField()
    statusCode = serializers.IntegerField(allow_null=True)
    excerpt = serializers.CharField(allow_blank=True)
    value = serializers.FloatField(allow_null=True, help_text="What the jsonParseTask after it extracted.")
    error = serializers.CharField(allow_blank=True)
    elapsedMs = serializers.IntegerField(allow_null=True)


class EvaluationOutput(serializers.Serializer):
    offchainId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=EvaluationStatus.choices, help_text=(
        "REQUESTED: queued for the worker; EVALUATING: a worker is on it; FAILED: the job gave no value, nothing was sent; REJECTED: the update was refused before sending (errors say why); SUBMITTED: on its way; "
        "CONFIRMED: the feed holds the value; NOT_LANDED: the update failed or expired, the feed kept its value."))
    trigger = serializers.ChoiceField(choices=EvaluationTrigger.choices)
    requestedAt = serializers.CharField()
    startedAt = serializers.CharField(allow_null=True)
    finishedAt = serializers.CharField(allow_null=True)
    result = serializers.FloatField(allow_null=True, help_text="The job's result, every digit.")
    value = serializers.FloatField(allow_null=True, help_text="What the update carries: the result at the feed's exponent (mantissa × 10^exponent).")
    mantissa = serializers.IntegerField(allow_null=True)
    round = serializers.IntegerField(allow_null=True)
    observedAt = serializers.CharField(allow_null=True)
    jobHash = serializers.CharField()
    sources = SourceAnswerOutput(many=True, help_text="Every httpTask's call: status, an excerpt of the answer, the value extracted or the error.")
    errors = serializers.ListField(child=serializers.CharField())
    transaction = _Transaction(allow_null=True)


class DataSourceOutput(serializers.Serializer):
    """A data source (detail level ``detailed``; Fetch Onchain Data Source Details)."""

    onchainId = serializers.CharField(help_text="The feed account.")
    offchainId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=DataSourceStatus.choices)
    defiProtocol = serializers.ChoiceField(choices=[DEFI_PROTOCOL])
    wasAlreadyOnchain = serializers.BooleanField()
    partnerOracleDetails = OraclePartnerDetailsOutput()
    dataDetails = DataDetailsOutput()
    financialInstrument = _Instrument()
    oracleDataSourceAuthority = _Record(help_text="offchainId: the organization's account; null for a key the service generated.")
    program = _Address()
    onchainValue = FeedOutput(allow_null=True)
    lastEvaluation = EvaluationOutput(allow_null=True)
    lastUpdateAt = serializers.CharField(allow_null=True, help_text="The cluster's clock at the feed's last accepted update the record knows.")
    createdAt = serializers.CharField()
    creationTransaction = _Transaction(allow_null=True)
    lastTransaction = _Transaction(allow_null=True)


class _CompactInstrument(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()


class DataSourceCompactOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=DataSourceStatus.choices)
    financialInstrument = _CompactInstrument()
    kind = serializers.ChoiceField(choices=DATA_KINDS)
    value = serializers.FloatField(allow_null=True)
    round = serializers.IntegerField()
    lastUpdateAt = serializers.CharField(allow_null=True)
    lastEvaluationStatus = serializers.ChoiceField(choices=EvaluationStatus.choices, allow_null=True)


BulkDataSourcesOutput = bulk_output("BulkDataSourcesOutput", DataSourceOutput)
BulkDataSourcesCompactOutput = bulk_output("BulkDataSourcesCompactOutput", DataSourceCompactOutput)
BulkDataSourcesIdentifiersOutput = bulk_output("BulkDataSourcesIdentifiersOutput", DataSourceIdentifiersOutput)


def _mutation_output(component: str, **fields):
    return type(component, (serializers.Serializer,), {**fields, "svmTransaction": TransactionResultOutput(allow_null=True), "__module__": __name__})


CreateDataSourceOutput = _mutation_output("CreateDataSourceOutput", newOnchainDataSource=DataSourceIdentifiersOutput())
UpdateDataSourceOutput = _mutation_output("UpdateDataSourceOutput", updatedOnchainDataSource=DataSourceIdentifiersOutput())
RefreshDataSourceOutput = _mutation_output("RefreshDataSourceOutput", refreshedOnchainDataSource=DataSourceIdentifiersOutput(), evaluation=EvaluationOutput())
