"""What the market data serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a data source lookup names a source; an existing
feed goes with alreadyOnchain; a job definition is a JSON document in a string (format
oracle-job: docs/marketdata.md, "Job definitions")."""

from __future__ import annotations


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    lookup = schemas.get("DataSourceLookupRequest")
    if lookup is not None:  # onchainId or offchainId (400 INVALID_LOOKUP)
        lookup["anyOf"] = [{"required": [name], "properties": {name: {"type": "string"}}} for name in ("onchainId", "offchainId")]
    create = schemas.get("CreateDataSourceItemRequest")
    if create is not None:  # existingOnchainDataSourceAccount with alreadyOnchain true only (REQUIRED / CONFLICTING_FIELDS)
        create["anyOf"] = [
            {"required": ["alreadyOnchain", "existingOnchainDataSourceAccount"],
             "properties": {"alreadyOnchain": {"type": "boolean", "enum": [True]}, "existingOnchainDataSourceAccount": {"type": "object"}}},
            {"properties": {"alreadyOnchain": {"type": "boolean", "enum": [False]},
                            "existingOnchainDataSourceAccount": {"type": "object", "nullable": True, "enum": [None]}}},
        ]
    for name in ("PartnerOracleDetailsRequest", "UpdatePartnerOracleDetailsRequest"):
        job = (schemas.get(name) or {}).get("properties", {}).get("jobDefinition")
        if job is not None:  # 400 INVALID_JOB_DEFINITION / URL_NOT_ALLOWED naming the bad task
            job["format"] = "oracle-job"
    return result
