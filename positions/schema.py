"""What the positions serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): the rules between the fields of position bodies: onboarding, token values, position lookups."""

from __future__ import annotations

from ledger_project.api.schema import given


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    initialize_position = schemas.get("InitializePositionItemRequest")
    if initialize_position is not None:
        # Onboarding (alreadyOnchain) takes the owner's associated token account (CONFLICTING_FIELDS).
        initialize_position.setdefault("allOf", []).append({"anyOf": [{"properties": {"alreadyOnchain": {"type": "boolean", "enum": [False]}}},
                                                                      {"properties": {"associated": {"type": "boolean", "enum": [True]}}}]})
    # A token value too (positions/values.py): amount a decimal string or integer.
    for name in ("TokenValueRequest", "NetworkValueRequest"):
        if name in schemas:
            schemas[name]["anyOf"] = [given("lamports", "integer"), {"required": ["amount"], "properties": {"amount": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}]}}}]
    # A position lookup names the position, or an owner and an instrument (positions/lookup.py:
    # 400 INVALID_LOOKUP / REQUIRED otherwise).
    inapplicable = {"MintPositionLookupRequest": ("freezeAuthority",), "MovingPositionLookupRequest": ("mintAuthority", "freezeAuthority")}
    for name in ("PositionLookupRequest", "PositionBalanceItemRequest", *inapplicable):
        if name in schemas:
            schemas[name]["anyOf"] = [given("position", "object"), {"allOf": [given("owner", "object"), given("financialInstrument", "object")]}]
            for field in inapplicable.get(name, ()):
                schemas[name]["properties"][field] = {"type": "object", "nullable": True, "enum": [None], "description": "Does not apply to this operation (400 NOT_APPLICABLE)."}
    # A value names lamports or amount.
    if "ValueRequest" in schemas:
        schemas["ValueRequest"]["anyOf"] = [given("lamports", "integer"), {"required": ["amount"], "properties": {"amount": {"type": "string", "minLength": 1}}}]
    return result
