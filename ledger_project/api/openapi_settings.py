"""drf-spectacular's settings for the OpenAPI document (docs/api.md): fixed, no environment."""

SPECTACULAR_SETTINGS = {
    "TITLE": "Tokenized Asset Ledger Service",
    "DESCRIPTION": "Multi-tenant HTTP/JSON service managing tokenized assets on an SVM network. "
    "Authenticate with `Authorization: Bearer <api key secret or access token>`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
    "ENUM_NAME_OVERRIDES": {
        "AccountStatusEnum": "accounts.models.AccountStatus.choices",
        "InstrumentStatusEnum": "instruments.models.InstrumentStatus.choices",
        "AccountTypeEnum": "accounts.models.AccountType.choices",
        "PositionStateEnum": "instruments.models.PositionState.choices",
        "LookupTableStateEnum": "lookup_tables.models.LookupTableState.choices",
        "WebhookStatusEnum": "webhooks.models.WebhookStatus.choices",
        "WebhookSettableStatusEnum": "webhooks.models.SETTABLE_STATUSES",
        "OracleKindEnum": "marketdata.models.ORACLE_KINDS",
        "DataKindEnum": "marketdata.models.DATA_KINDS",
        "DataSourceSettableStatusEnum": "marketdata.models.SETTABLE_STATUSES",
        "EvaluationStatusEnum": "marketdata.models.EvaluationStatus.choices",
        # defiProtocol takes one value per area (spec: PARTNER_ORACLE, PARTNER_LENDING).
        "OracleProtocolEnum": [("PARTNER_ORACLE", "PARTNER_ORACLE")],
        "LendingProtocolEnum": [("PARTNER_LENDING", "PARTNER_LENDING")],
    },
    # PATCH bodies are whole envelopes (itemData required), not partial records.
    "COMPONENT_SPLIT_PATCH": False,
    # The rules common to every area first, then each area's own (its schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums", "ledger_project.api.schema.postprocess", "accounts.schema.postprocess",
        "positions.schema.postprocess", "instruments.schema.postprocess", "transactions.schema.postprocess", "webhooks.schema.postprocess",
        "lookup_tables.schema.postprocess", "loans.schema.postprocess", "vaults.schema.postprocess", "marketdata.schema.postprocess",
    ],
    # The payloads the service sends (docs/webhooks.md); an OpenAPI 3.0 document carries them
    # as x-webhooks (ledger_project/api/schema.py).
    "WEBHOOKS": [
        "webhooks.serializers.OPENAPI_PRE_SUBMIT",
        "webhooks.serializers.OPENAPI_POST_SUBMIT",
        "webhooks.serializers.OPENAPI_RESIGNED",
        "webhooks.serializers.OPENAPI_NETWORK_EVENT",
    ],
}
