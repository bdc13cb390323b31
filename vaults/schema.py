"""What the vault serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a vault lookup names a vault; a destination is named
by position or by owner, not both."""

from __future__ import annotations

from ledger_project.api.schema import given


_NULL = {"type": "object", "nullable": True, "enum": [None]}


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    lookup = schemas.get("VaultLookupRequest")
    if lookup is not None:  # onchainId, offchainId, or both instruments (400 INVALID_LOOKUP / REQUIRED)
        lookup["anyOf"] = [
            {"required": ["onchainId"], "properties": {"onchainId": {"type": "string"}}},
            {"required": ["offchainId"], "properties": {"offchainId": {"type": "string"}}},
            {"allOf": [given("loanFinancialInstrument", "object"), given("paymentFinancialInstrument", "object")]},
        ]
        # One instrument alone names no pair (400 REQUIRED).
        lookup["allOf"] = [{"anyOf": [
            {"properties": {"loanFinancialInstrument": _NULL, "paymentFinancialInstrument": _NULL}},
            {"allOf": [given("loanFinancialInstrument", "object"), given("paymentFinancialInstrument", "object")]},
        ]}]
    destination = schemas.get("VaultDestinationRequest")
    if destination is not None:  # position or owner (REQUIRED), not both (CONFLICTING_FIELDS)
        destination["anyOf"] = [
            {"allOf": [given("position", "object"), {"properties": {"owner": _NULL}}]},
            {"allOf": [given("owner", "object"), {"properties": {"position": _NULL}}]},
        ]
    return result
