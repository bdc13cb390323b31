"""What the loan serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a loan (by its escrow) and a loan strategy are named
by onchainId or offchainId."""

from __future__ import annotations

from ledger_project.api.schema import given


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    for name in ("EscrowLookupRequest", "StrategyLookupRequest"):
        identifier = schemas.get(name)
        if identifier is not None:
            identifier["anyOf"] = [given("onchainId", "string"), given("offchainId", "string")]
    return result
