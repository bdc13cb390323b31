"""What the instrument serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess, as vaults and marketdata have): the rules between
fields of Create and Update Financial Instrument that instruments/services.py and
instruments/changes.py check, the alId pattern (instruments/alid.py), and the schema of
simpleCustomMetadata (an extension of drf-spectacular)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension

from ledger_project.api.schema import given

from .alid import CATEGORIES
from .extensions import EXTENSION_FIELDS, MIN_MULTIPLIER


class MetadataMapExtension(OpenApiSerializerFieldExtension):
    """simpleCustomMetadata: at most 32 keys of 1 to 64 characters (instruments/serializers.py;
    registered when the app is ready: instruments/apps.py)."""

    target_class = "instruments.serializers.MetadataMap"

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["maxProperties"] = 32
            # OpenAPI 3.0 has no propertyNames: the key rule is stated in an extension (the
            # schemathesis hooks honour it) and in words.
            schema["x-propertyNames"] = {"minLength": 1, "maxLength": 64}
            schema["description"] = "Keys of 1 to 64 characters, at most 32 keys."
        return schema


def al_id_pattern() -> str:
    """The given alIds the service accepts (empty: none given), from the one table."""
    kinds = "|".join(f"{code}(?:{'|'.join(sorted(types.values(), key=len, reverse=True))})" for code, types in CATEGORIES.values())
    return f"^(?:AL(?:{kinds})[0-9]{{8}})?$"



def _lacks(item: str) -> dict:
    return {"type": "array", "items": {"not": {"enum": [item]}}}


def _has(item: str) -> dict:
    """``contains`` in OpenAPI 3.0 terms: not every item differs from ``item``."""
    return {"type": "array", "not": {"items": {"not": {"enum": [item]}}}}

def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    # Positive normal multipliers only (OUT_OF_RANGE; Token-2022 refuses subnormals), in Create
    # and Update alike.
    for name in ("CreateInstrumentItemRequest", "UpdateInstrumentItemRequest"):
        multiplier = schemas.get(name, {}).get("properties", {}).get("scaledUiAmountMultiplier")
        if multiplier is not None:
            multiplier.update({"minimum": MIN_MULTIPLIER, "description": "A positive normal double (at least the smallest normal, 2.2250738585072014e-308)."})
    create_instrument = schemas.get("CreateInstrumentItemRequest")
    if create_instrument is not None:
        create_instrument["anyOf"] = [
            {"required": ["offchainReferences"], "properties": {"offchainReferences": {"type": "object", "required": ["newAlId"], "properties": {"newAlId": {"type": "object"}}}}},
            {"required": ["mintAccount"], "properties": {"mintAccount": {"type": "object", "required": ["offchainReferences"], "properties": {
                "offchainReferences": {"type": "object", "required": ["alId"], "properties": {"alId": {"type": "string", "minLength": 1}}}}}}},
        ]
        _null = {"nullable": True, "enum": [None]}
        create_instrument["allOf"] = [
            # A new mint account or an existing one, not both (CONFLICTING_FIELDS).
            {"anyOf": [{"properties": {"mintAccount": _null}}, {"properties": {"existingMintAccount": _null}}]},
            # (Both spellings of alreadyOnchain may be given only with one value, CONFLICTING_FIELDS:
            # stated in their descriptions and the schemathesis filter_case hook. With the address
            # patterns, one anyOf fewer keeps the object within what schemathesis's canonicalizer
            # expands; docs/api.md.)
        ]
        # Creating a new mint (not onboarding one: alreadyOnchain) — instruments/services.py
        # instrument_create, requested_extensions.
        spl_no_extensions = {"properties": {
            **{name: _null for name in [*EXTENSION_FIELDS, "defaultPositionState"]},
            "onchainData": {"type": "object", "nullable": True, "properties": {"simpleCustomMetadata": {"type": "object", "nullable": True, "maxProperties": 0}}},
        }}
        new_mint = {"allOf": [
            # A new mint needs its mintAuthority (REQUIRED).
            given("mintAuthority", "object"),
            # SPL mints have no extensions (SPL_NO_EXTENSIONS).
            {"anyOf": [{"properties": {"version": {"type": "string", "nullable": True, "enum": [None, "TOKEN_2022"]}}}, spl_no_extensions]},
            # Confidential mint and burn needs its keys and confidential transfers (EXTENSION_REQUIRES, INVALID).
            {"anyOf": [{"properties": {"confidentialMintBurn": _null, "confidentialMintBurnAuthority": _null}},
                       {"allOf": [given("confidentialMintBurn", "object"), {"anyOf": [given("confidentialTransfer", "object"), given("confidentialTransferAuthority", "object")]}]}]},
            # (Positions start FROZEN only with a freezeAuthority, REQUIRES_FREEZE_AUTHORITY: stated in
            # defaultPositionState's description and the schemathesis filter_case hook — one more
            # anyOf here is past what schemathesis's canonicalizer expands; docs/api.md.)
            # A new mint account is managed; its size and rent follow from the extensions (INVALID).
            {"properties": {"mintAccount": {"type": "object", "nullable": True, "properties": {
                "dataLength": {"type": "integer", "enum": [0]}, "seed": _null, "managed": {"type": "boolean", "enum": [True]}}}}},
        ]}
        onboarding = {"anyOf": [{"required": ["alreadyOnchain"], "properties": {"alreadyOnchain": {"type": "boolean", "enum": [True]}}},
                                {"required": ["alreadyOnChain"], "properties": {"alreadyOnChain": {"type": "boolean", "enum": [True]}}}]}
        # (Onboarding names the mint, mintAccount.onchainId or existingMintAccount: REQUIRED; stated in
        # alreadyOnchain's description and the schemathesis filter_case hook, like FROZEN below.)
        create_instrument["allOf"].append({"anyOf": [onboarding, new_mint]})
        for name in ("alreadyOnchain", "alreadyOnChain"):
            if name in create_instrument["properties"]:
                create_instrument["properties"][name]["description"] = (
                    "true: record a mint that exists, named by mintAccount.onchainId or existingMintAccount (400 REQUIRED). "
                    "alreadyOnchain and alreadyOnChain are one field: given both, they must agree (400 CONFLICTING_FIELDS)."
                )
        state = create_instrument["properties"].get("defaultPositionState")
        if state is not None:
            state["description"] = "FROZEN needs a freezeAuthority when a new mint is created (400 REQUIRES_FREEZE_AUTHORITY)."
        # A given alId follows AL{category}{type of that category}{8 digits} (instruments/alid.py).
        mint_account = create_instrument["properties"].get("mintAccount")
        if mint_account is not None:
            mint_account.setdefault("allOf", []).append({"properties": {"offchainReferences": {"type": "object", "nullable": True, "properties": {
                "alId": {"type": "string", "nullable": True, "pattern": al_id_pattern(), "description": "AL{category code}{type code of that category}{8 digits}, e.g. ALFICBD00000001."}}}}})
    update_instrument = schemas.get("UpdateInstrumentItemRequest")
    if update_instrument is not None:
        # A current authority is named only to replace it: current… goes with new… (REQUIRED).
        update_instrument.setdefault("allOf", []).extend(
            {"anyOf": [{"properties": {f"current{role}Authority": {"nullable": True, "enum": [None]}}},
                       {"required": [f"new{role}Authority"], "properties": {f"new{role}Authority": {"type": "object"}}}]}
            for role in ("Closing", "Pausable", "ScaledUiAmount", "TransferHook")
        )
    # ElGamal public keys are 32 bytes, a decryptable supply 36 bytes, base64-encoded (INVALID).
    base64_sizes = {"ConfidentialTransferRequest": {"auditorElgamalPubkey": 32}, "ConfidentialMintBurnRequest": {"supplyElgamalPubkey": 32, "decryptableSupply": 36}}
    for name, fields in base64_sizes.items():
        for field, size in fields.items():
            if name in schemas and field in schemas[name]["properties"]:
                prop = schemas[name]["properties"][field]
                full, rest = divmod(size, 3)
                prop["pattern"] = f"^[A-Za-z0-9+/]{{{4 * full}}}" + ("" if not rest else f"[A-Za-z0-9+/]{{{rest + 1}}}{'=' * (3 - rest)}") + "$"
                prop.pop("minLength", None)
                prop.pop("maxLength", None)
                prop["description"] = f"{size} bytes, base64-encoded."
    calculator = schemas.get("CalculatorInputRequest")
    if calculator is not None:
        calculator["properties"]["extensions"] = {"allOf": [calculator["properties"]["extensions"],
            {"anyOf": [_lacks("TOKEN_METADATA"), _has("METADATA_POINTER")]},
            {"anyOf": [_lacks("CONFIDENTIAL_MINT_BURN"), _has("CONFIDENTIAL_TRANSFER")]}],
            "description": "TOKEN_METADATA needs METADATA_POINTER, CONFIDENTIAL_MINT_BURN needs CONFIDENTIAL_TRANSFER."}
        calculator["anyOf"] = [
            {"properties": {"metadata": {"type": "object", "nullable": True, "maxProperties": 0}}},
            {"properties": {"extensions": _has("TOKEN_METADATA")}},
        ]
    return result
