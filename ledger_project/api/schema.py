"""The OpenAPI description (drf-spectacular): shared parts every operation uses.

- ``api_responses()``: the success answer plus every error status the operation can
  give, each with the one error schema (``{"errors": [{code, message, field}], "requestId"}``,
  ledger_project/api/errors.py) — views name their success answer only;
- ``operation_parameters()``: the query and header parameters (svmCluster and its alias
  chainClusterId, wait, x-request-id) with their enums and formats;
- extensions: StrictSerializer bodies refuse unknown fields (``additionalProperties:
  false``), base58 addresses carry their pattern;
- ``postprocess``: what a serializer cannot say — a lookup names a record, request bodies
  with required fields are required.

tests/test_openapi.py checks that every operation documents its error statuses.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

BASE58_ADDRESS = "^[1-9A-HJ-NP-Za-km-z]{32,44}$"
OUTBOUND_URL_PATTERN = "^https?://[^/?#@]+(?:[/?#].*)?$"
UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


# --- errors --------------------------------------------------------------------------------


class ErrorItemOutput(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable error code (docs/errors.md).")
    message = serializers.CharField(help_text="What went wrong, for people.")
    field = serializers.CharField(allow_null=True, help_text="Dotted path of the offending input (itemData.account.onchainId, svmCluster, x-request-id), or null.")


class ErrorOutput(serializers.Serializer):
    """Every 4xx and 5xx answer of the API."""

    errors = ErrorItemOutput(many=True)
    requestId = serializers.CharField(allow_null=True, help_text="The request's id (x-request-id); quote it when reporting a problem.")


ERROR_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON, a field that breaks its schema or a rule between fields, an unknown field, cluster or detail level, too deep a body.",
    401: "No valid bearer token (API key secret or access token); for auth/token, unknown client_id or wrong client_secret.",
    403: "The API key lacks a role this operation (or a tenancyConfig override) requires.",
    404: "A record the request names does not exist or is not visible to the acting organization.",
    409: "The request conflicts with a record's state, another request in flight, or an x-request-id used for a different request.",
    411: "A body was sent with Transfer-Encoding (chunked) instead of a Content-Length.",
    413: "The body is larger than the documented limit (docs/api.md).",
    415: "The body is not application/json.",
    429: "Too many requests for this API key; retry after the Retry-After header's seconds.",
    500: "Unexpected server error; quote the requestId.",
    503: "A backing service (network node, broker, pool) is unavailable; retry later.",
}

#: statuses every operation can answer
COMMON_ERRORS = (400, 401, 411, 413, 415, 429, 500, 503)


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    return {status: OpenApiResponse(ErrorOutput, description=ERROR_DESCRIPTIONS[status]) for status in statuses}


def api_responses(success: dict, *, authenticated: bool = True, lookup: bool = True, mutation: bool = False) -> dict:
    """``success`` (e.g. ``{201: CreateAccountOutput}``) and the error answers of an
    operation: the common ones, 403/404 for authenticated operations (roles, tenancyConfig
    override, lookups), 409 for mutations."""
    statuses = list(COMMON_ERRORS)
    if authenticated:
        statuses.append(403)
    if authenticated and lookup:
        statuses.append(404)
    if mutation:
        statuses.append(409)
    return {**success, **error_responses(*sorted(statuses))}


def bulk_responses(name: str, detailed, compact, identifiers) -> dict:
    """A bulk fetch's answer: one items schema per detail level (the path's detail_level
    picks it); ``anyOf`` because an empty page matches each."""
    from drf_spectacular.utils import PolymorphicProxySerializer

    return api_responses({200: PolymorphicProxySerializer(component_name=name, serializers=[detailed, compact, identifiers], resource_type_field_name=None)}, lookup=False)


# --- parameters ----------------------------------------------------------------------------


def _cluster_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.QUERY, enum=sorted(settings.LEDGER_CLUSTERS), description=description)


CLUSTER = _cluster_parameter("svmCluster", f"Cluster the request addresses (default {settings.LEDGER_DEFAULT_CLUSTER}; the configured clusters).")
CLUSTER_ALIAS = _cluster_parameter("chainClusterId", "Older alias of svmCluster; when both are given they must name the same cluster.")
WAIT = OpenApiParameter("wait", str, OpenApiParameter.QUERY, enum=["submitted", "confirmed", "finalized"], description="Wait (after commit) until the transaction reaches this status, at most LEDGER_WAIT_TIMEOUT_SECONDS.")
REQUEST_ID = OpenApiParameter("x-request-id", OpenApiTypes.UUID, OpenApiParameter.HEADER, description="Your id of the request (a UUID), echoed in the answer and in errors; on mutations it makes a retry idempotent (docs/api.md).")
DETAIL_LEVEL = OpenApiParameter("detail_level", str, OpenApiParameter.PATH, enum=["detailed", "compact", "identifiers"], description="How much of each record the answer carries.")


def operation_parameters(*, cluster: bool = True, wait: bool = False) -> list[OpenApiParameter]:
    params = [REQUEST_ID]
    if cluster:
        params += [CLUSTER, CLUSTER_ALIAS]
    if wait:
        params.append(WAIT)
    return params


# --- extensions ----------------------------------------------------------------------------


class StrictSerializerExtension(OpenApiSerializerExtension):
    """Bodies built from StrictSerializer refuse fields they do not declare."""

    target_class = "ledger_project.api.envelope.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        return schema


NO_NUL = "^[^\\u0000]*$"
# Text fields trim whitespace and most refuse the blank that leaves.
NO_NUL_NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


class RequestTextExtension(OpenApiSerializerFieldExtension):
    """Text in request bodies carries no NUL character (DRF refuses it: 400
    NULL_CHARACTERS_NOT_ALLOWED), nor only whitespace where blank is refused."""

    target_class = "rest_framework.fields.CharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and schema.get("type") == "string" and "pattern" not in schema and "format" not in schema:
            field = self.target
            schema["pattern"] = NO_NUL_NOT_BLANK if (not field.allow_blank and field.trim_whitespace) else NO_NUL
        return schema


class RequestDecimalExtension(OpenApiSerializerFieldExtension):
    """A decimal in a request body: a string of digits (``1``, ``1.``, ``.5``), no more whole
    digits and decimals than the field keeps, no sign where the minimum is 0."""

    target_class = "rest_framework.fields.DecimalField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        field = self.target
        if direction == "request" and field.max_digits is not None and field.decimal_places is not None:
            nullable = schema.get("nullable")
            schema.clear()
            schema.update(decimal_schema(field.max_digits - field.decimal_places, field.decimal_places, signed=field.min_value is None or field.min_value < 0, blank=bool(field.allow_null)))
            if nullable:
                schema["nullable"] = True
        return schema


def decimal_schema(whole: int, places: int, *, signed: bool = True, blank: bool = False) -> dict:
    """A decimal as DRF's DecimalField takes it: a string of digits or a JSON integer (a
    fractional JSON number is read through its text, so a string says it exactly)."""
    pattern = decimal_pattern(whole, places, signed=signed)
    if blank:  # DRF reads "" as null where null is allowed
        pattern = pattern.replace("^", "^(?:", 1)[:-1] + ")?$"
    integer = {"type": "integer", "maximum": 10**whole - 1, "minimum": 1 - 10**whole if signed else 0}
    return {"anyOf": [{"type": "string", "format": "decimal", "pattern": pattern}, integer],
            "description": f"A decimal: a string (at most {whole} whole digits and {places} decimals) or a JSON integer."}


def decimal_pattern(whole: int, places: int, *, signed: bool = True) -> str:
    sign = "-?" if signed else ""
    return f"^{sign}(?:\\d{{1,{whole}}}(?:\\.\\d{{0,{places}}})?|\\.\\d{{1,{places}}})$"


class AddressFieldExtension(OpenApiSerializerFieldExtension):
    target_class = "ledger_project.api.envelope.AddressField"
    match_subclasses = True
    priority = 1

    def map_serializer_field(self, auto_schema, direction):
        schema = build_basic_type(OpenApiTypes.STR)
        schema.update(address_schema())
        return schema


ADDRESS_MIN_LENGTH, ADDRESS_MAX_LENGTH = 32, 44


def address_schema() -> dict:
    """A base58 network address wherever one is taken or shown: the format, and the pattern
    and lengths a generator that does not know the format still honours (an outside
    schemathesis run sent "" and arbitrary strings: 400 REQUIRED / INVALID_ADDRESS). No
    pattern says "decodes to exactly 32 bytes": the pattern also admits a few strings of the
    right alphabet and length that do not (43 "1"s are 43 zero bytes; a 44-character value
    over 2^256), which the API refuses with 400 INVALID_ADDRESS — the format names that
    rule, and the project's own generator knows it (scripts/schemathesis_hooks.py)."""
    return {"format": "base58-address", "pattern": BASE58_ADDRESS, "minLength": ADDRESS_MIN_LENGTH, "maxLength": ADDRESS_MAX_LENGTH,
            "description": "A network address: the base58 text (Bitcoin alphabet, 32 to 44 characters) of a 32-byte public key."}


# --- postprocessing ------------------------------------------------------------------------


def given(name: str, type_: str) -> dict:
    """``name`` is present and not null (OpenAPI 3.0: a type without nullable)."""
    return {"required": [name], "properties": {name: {"type": type_}}}


# --- itemQuery ---------------------------------------------------------------------------

#: operationId → the QuerySpec of a bulk fetch (registered by the view with item_query())
ITEM_QUERIES: dict = {}


def item_query(operation_id: str, spec):
    """Register a bulk fetch's QuerySpec: its itemQuery is documented with the fieldNames,
    dataTypes, filter types and limit it accepts (ledger_project/api/query.py)."""
    ITEM_QUERIES[operation_id] = spec
    return operation_id


_TYPED_STRING = {
    "TEXT": {"type": "string", "pattern": NO_NUL},
    "TIMESTAMP": {"type": "string", "format": "date-time"},
    "OFFCHAIN_ID": {"type": "string", "format": "uuid"},
    "ONCHAIN_ADDRESS_ID": {"type": "string", "format": "base58-address", "pattern": BASE58_ADDRESS, "minLength": 32, "maxLength": 44},
}


def _filter_value_branches(data_type: str, nullable: bool) -> list[dict]:
    ref = {"$ref": "#/components/schemas/FilterValueRequest"}
    number = decimal_schema(28, 12)

    def branch(filter_types, required: dict | None = None, any_of: list | None = None) -> dict:
        types = {"filterType": {"type": "string", "enum": list(filter_types)}}
        out = {"allOf": [ref], "properties": {"dataType": {"type": "string", "enum": [data_type]}, **types}, "required": ["dataType"]}
        if "EQUALS" in filter_types:  # the default filterType
            out["properties"]["filterType"] = {**types["filterType"], "nullable": False}
            out["required"] = ["dataType"]
        else:
            out["required"] = ["dataType", "filterType"]
        for name, schema in (required or {}).items():
            out["required"].append(name)
            out["properties"][name] = schema
        if any_of:
            out["anyOf"] = any_of
        return out

    if data_type == "NUMBER":
        scalar = {"valueNumber": number}
    elif data_type == "BOOLEAN":
        scalar = {"valueBoolean": {"type": "boolean"}}
    else:
        scalar = {"valueString": _TYPED_STRING[data_type]}
    if data_type == "BOOLEAN":
        # valuesString without valueString reads as IN, which booleans do not have
        branches = [branch(("EQUALS", "NOT_EQUALS"), scalar)]
        branches[0]["properties"]["valuesString"] = {"type": "array", "nullable": True, "maxItems": 0}
    else:
        item = number if data_type == "NUMBER" else _TYPED_STRING[data_type]
        branches = [branch(("NOT_EQUALS",), scalar)]
        if data_type == "NUMBER":
            branches.append(branch(("EQUALS",), scalar))
        else:  # EQUALS with valuesString (and no valueString) reads as IN
            branches.append(branch(("EQUALS",), any_of=[{"required": list(scalar), "properties": scalar},
                                                         {"required": ["valuesString"], "properties": {"valuesString": {"type": "array", "minItems": 1, "items": item},
                                                                                                          "valueString": {"type": "string", "nullable": True, "enum": [None]}}}]))
    if data_type != "BOOLEAN":
        item = number if data_type == "NUMBER" else _TYPED_STRING[data_type]
        branches.append(branch(("IN",), {"valuesString": {"type": "array", "minItems": 1, "maxItems": 500, "items": item}}))
    if data_type in ("NUMBER", "TIMESTAMP", "TEXT"):
        low, high = ("valueFromNumber", "valueToNumber") if data_type == "NUMBER" else ("valueFromString", "valueToString")
        bound = number if data_type == "NUMBER" else _TYPED_STRING[data_type]
        ranged = branch(("RANGE",), any_of=[{"required": [low], "properties": {low: bound}}, {"required": [high], "properties": {high: bound}}])
        optional = decimal_schema(28, 12, blank=True) if data_type == "NUMBER" else bound  # DRF reads a blank decimal as null
        ranged["properties"].update({low: {**optional, "nullable": True}, high: {**optional, "nullable": True}})  # both bounds, when given, are typed
        branches.append(ranged)
    if data_type == "TEXT":
        branches.append(branch(("CONTAINS",), scalar))
    if nullable:
        branches.append(branch(("IS_NULL", "IS_NOT_NULL")))
    return branches


def item_query_schema(spec) -> dict:
    groups: dict[tuple[str, bool], list[str]] = {}
    aliases: dict[str, list[str]] = {}
    for alias, target in spec.aliases.items():
        aliases.setdefault(target, []).append(alias)
    for name, field in spec.fields.items():
        groups.setdefault((field.data_type, field.nullable), []).extend([name, *aliases.get(name, [])])
    filters = []
    for (data_type, nullable), names in sorted(groups.items()):
        filters.append({
            "allOf": [{"$ref": "#/components/schemas/FilterRequest"}],
            "properties": {
                "fieldName": {"type": "string", "enum": sorted(names)},
                "filterValues": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"anyOf": _filter_value_branches(data_type, nullable)}},
            },
        })
    sortable = sorted(n for name, f in spec.fields.items() if f.sortable for n in (name, *aliases.get(name, [])))
    return {
        "allOf": [{"$ref": "#/components/schemas/ItemQueryRequest"}],
        "nullable": True,
        "description": "The fieldNames, dataTypes and filter types this fetch accepts (docs/query.md).",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": spec.max_limit, "nullable": True},
            "filter": {"type": "array", "nullable": True, "maxItems": 50, "items": {"anyOf": filters}},
            "sort": {"type": "array", "nullable": True, "maxItems": 10, "items": {
                "allOf": [{"$ref": "#/components/schemas/SortRequest"}],
                "properties": {"fieldName": {"type": "string", "enum": sortable}},
            }},
        },
    }


ACCOUNT_REFERENCES = ("alId", "code", "accountNumber")
INSTRUMENT_REFERENCES = ("alId", "code")
LOOKUP_REFERENCES = {
    "LookupRequest": ACCOUNT_REFERENCES,
    "OwnLookupRequest": ACCOUNT_REFERENCES,
    "InstrumentLookupRequest": INSTRUMENT_REFERENCES,
    "OwnInstrumentLookupRequest": INSTRUMENT_REFERENCES,
}


NULL_STRING = {"type": "string", "nullable": True, "enum": [None]}


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    # Every address states its pattern and lengths, whatever declared it (address_schema).
    for node in _walk(schemas):
        if node.get("format") == "base58-address":
            node.update({key: value for key, value in address_schema().items() if key != "description"})
    # URLs the service calls: no credentials; the host must resolve to public addresses only
    # (ledger_project/outbound.py) — a fact of DNS, not of the body: format outbound-url. The
    # scheme is a fact of the deployment: one document serves every mode, and http is taken
    # where the server allows it (the embedded mode or DEBUG with LEDGER_OUTBOUND_ALLOW_HTTP:
    # `make run`'s http://127.0.0.1 example), https only elsewhere (400 URL_NOT_ALLOWED).
    # (Request bodies only: an answer shows what was stored.)
    for node in _walk({name: schema for name, schema in schemas.items() if name.endswith("Request")}):
        for name in ("endpointUrl", "accessTokenUrl"):
            prop = (node.get("properties") or {}).get(name) if isinstance(node.get("properties"), dict) else None
            if isinstance(prop, dict) and prop.get("type") == "string":
                prop["format"] = "outbound-url"
                prop["pattern"] = OUTBOUND_URL_PATTERN
                prop["description"] = ("https URL (http too where the server allows it: the embedded mode or DEBUG with LEDGER_OUTBOUND_ALLOW_HTTP, "
                                       "never in production) without credentials, whose host resolves to public addresses only (else 400 URL_NOT_ALLOWED; "
                                       "docs/webhooks.md, Safety).")
    # A lookup names a record by onchainId, offchainId or offchainReferences, and
    # offchainReferences by alId, code or accountNumber (instruments: alId or code); given
    # with other identifiers, offchainReferences is empty or names the record too
    # (accounts/lookup.py, instruments/lookup.py).
    for name, refs in LOOKUP_REFERENCES.items():
        if name not in schemas:
            continue
        lookup = schemas[name]
        names_record = {"type": "object", "anyOf": [given(ref, "string") for ref in refs]}
        lookup["anyOf"] = [given("onchainId", "string"), given("offchainId", "string"), {"required": ["offchainReferences"], "properties": {"offchainReferences": names_record}}]
        if "accountNumber" in refs:
            lookup["properties"]["offchainReferences"]["anyOf"] = [{"maxProperties": 0}, *names_record["anyOf"]]
        # A record the request changes or signs with is the acting organization's own (the
        # server also takes that organization's own external id, which no schema can name).
        if name.startswith("Own"):
            lookup["properties"]["otherTenantOrganizationExternalId"] = {
                "type": "string", "nullable": True, "enum": [None],
                "description": "Null or absent: records of another organization cannot be changed or used to sign (400 NOT_WRITABLE).",
            }
    # Rules between the fields of one area's bodies: that area's schema.py (accounts, positions,
    # instruments, transactions, webhooks, loans, …).
    # Bulk answers: one of the detail levels' shapes, any of them for an empty page;
    # compact and identifiers items carry exactly their fields.
    for name in [n for n in schemas if n.startswith("Bulk") and n.endswith("Page")]:
        if "oneOf" in schemas[name]:
            schemas[name]["anyOf"] = schemas[name].pop("oneOf")
    for name in ("AccountCompactOutput", "AccountCompactOnchainOutput", "AccountCompactOffchainOutput", "AccountIdentifiersOutput",
                 "InstrumentCompactOutput", "InstrumentCompactOnchainOutput", "InstrumentCompactOffchainOutput", "InstrumentCompactOnchainDataOutput", "IdentifiersOut",
                 "PositionCompactOutput", "PositionOwnerIdentifiersOutput", "PositionCompactInstrumentOutput", "PositionIdentifiersOutput"):
        if name in schemas:
            schemas[name]["additionalProperties"] = False
    # The payloads the service sends (SPECTACULAR_SETTINGS["WEBHOOKS"]): OpenAPI 3.0 has no
    # webhooks section (3.1 does), so they are published as the x-webhooks extension.
    if "webhooks" in result and not str(result.get("openapi", "")).startswith(("3.1", "3.2")):
        result["x-webhooks"] = result.pop("webhooks")
    # A named durable nonce account goes with messageLifetimeStrategy DURABLE_NONCE
    # (CONFLICTING_FIELDS, accounts/nonces.py).
    svm_config = schemas.get("SvmTransactionConfigRequest")
    if svm_config is not None:
        svm_config.setdefault("allOf", []).append({"anyOf": [
            {"properties": {"durableNonceAccount": {"type": "object", "nullable": True, "enum": [None]}}},
            {"required": ["messageLifetimeStrategy"], "properties": {"messageLifetimeStrategy": {"type": "string", "enum": ["DURABLE_NONCE"]}}},
        ]})
    for path in result.get("paths", {}).values():
        for operation in path.values():
            spec = ITEM_QUERIES.get(operation.get("operationId"))
            body_schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if spec is not None and "$ref" in body_schema:
                base = schemas[body_schema["$ref"].rsplit("/", 1)[-1]]
                name = operation["operationId"][0].upper() + operation["operationId"][1:] + "Request"
                schemas[name] = {**base, "properties": {**base["properties"], "itemQuery": item_query_schema(spec)}}
                body_schema["$ref"] = f"#/components/schemas/{name}"
            body = operation.get("requestBody")
            if not body:
                continue
            ref = body.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
            component = schemas.get(ref.rsplit("/", 1)[-1], {})
            if component.get("required"):
                body["required"] = True
    return result
