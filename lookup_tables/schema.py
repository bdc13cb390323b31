"""What the lookup-table serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a table lookup names a table; recipient goes with CLOSE."""

from __future__ import annotations


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    lookup = schemas.get("LookupTableLookupRequest")
    if lookup is not None:  # onchainId or offchainId (400 INVALID_LOOKUP)
        lookup["anyOf"] = [{"required": [name], "properties": {name: {"type": "string"}}} for name in ("onchainId", "offchainId")]
    update = schemas.get("UpdateLookupTableItemRequest")
    if update is not None:  # recipient with action CLOSE only (400 CONFLICTING_FIELDS)
        update["anyOf"] = [
            {"properties": {"recipient": {"type": "object", "nullable": True, "enum": [None]}}},
            {"properties": {"action": {"type": "string", "enum": ["CLOSE"]}}},
        ]
    return result
