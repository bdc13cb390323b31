"""What the transaction serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a transaction is named by onchainId or offchainId;
an off-platform signature is a signature or a DKG account's partial signatures."""

from __future__ import annotations

from ledger_project.api.schema import NULL_STRING, given


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    identifier = schemas.get("TransactionIdentifierRequest")
    if identifier is not None:
        identifier["anyOf"] = [given("onchainId", "string"), given("offchainId", "string")]
    # Sign Transaction: an off-platform signature is given as signature or as dkgSigning (a
    # DKG account's partial signatures): REQUIRED without either, CONFLICTING_FIELDS with both.
    off_platform_signature = schemas.get("OffPlatformSignatureRequest")
    if off_platform_signature is not None:
        off_platform_signature["anyOf"] = [
            {**given("signature", "string"), "properties": {"signature": {"type": "string", "minLength": 1}, "dkgSigning": {"type": "object", "nullable": True, "enum": [None]}}},
            {**given("dkgSigning", "object"), "properties": {"dkgSigning": {"type": "object"}, "signature": NULL_STRING}},
        ]
    return result
