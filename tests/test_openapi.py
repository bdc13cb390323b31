"""The OpenAPI document describes the error answers and inputs, not only the 2xx answer
(scripts/schemathesis_run.py checks the running server against it)."""

import pytest

ERROR_REF = "#/components/schemas/ErrorOutput"


@pytest.fixture(scope="module")
def openapi(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def _operations(openapi):
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_documents_its_error_statuses_with_the_error_schema(openapi):
    operations = dict(_operations(openapi))
    assert len(operations) >= 21
    for name, operation in operations.items():
        responses = operation["responses"]
        statuses = {int(s) for s in responses}
        common = {400, 401, 411, 413, 415, 429, 500, 503}
        assert common <= statuses, (name, sorted(statuses))
        if operation["operationId"] != "issueAccessToken":
            assert 403 in statuses, name
        if operation["operationId"] in {"createAccount", "updateAccount", "inactivateAccount", "createFinancialInstrument", "updateFinancialInstrument", "pauseFinancialInstrument", "unpauseFinancialInstrument", "closeFinancialInstrument"}:
            assert 409 in statuses, name
        for status, response in responses.items():
            if int(status) >= 400:
                assert response["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}, (name, status)
                assert response["description"], (name, status)
    error = openapi["components"]["schemas"]["ErrorOutput"]
    assert set(error["required"]) == {"errors", "requestId"}


def test_parameters_and_bodies_carry_their_rules(openapi):
    operations = dict(_operations(openapi))
    for name, operation in operations.items():
        params = {p["name"]: p for p in operation.get("parameters", [])}
        assert params["x-request-id"]["in"] == "header" and params["x-request-id"]["schema"]["format"] == "uuid", name
        if name != "POST /api/v1/auth/token":
            assert params["svmCluster"]["schema"]["enum"] == ["CHAIN_LOCALNET"], name
            assert params["chainClusterId"]["schema"]["enum"] == ["CHAIN_LOCALNET"], name
    wait = {p["name"]: p for p in operations["POST /api/v1/accounts"]["parameters"]}["wait"]
    assert sorted(wait["schema"]["enum"]) == ["confirmed", "finalized", "submitted"]
    detail = {p["name"]: p for p in operations["POST /api/v1/accounts/bulk/{detail_level}"]["parameters"]}["detail_level"]
    assert sorted(detail["schema"]["enum"]) == ["compact", "detailed", "identifiers"]

    schemas = openapi["components"]["schemas"]
    patch = operations["PATCH /api/v1/accounts"]["requestBody"]
    assert patch["required"] is True
    body = schemas[patch["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]]
    assert body["required"] == ["itemData"] and body["additionalProperties"] is False
    lookup = schemas["LookupRequest"]
    assert lookup["additionalProperties"] is False and len(lookup["anyOf"]) == 3
    assert lookup["properties"]["onchainId"]["format"] == "base58-address"


def test_bulk_fetches_document_their_item_query_and_items_per_detail_level(openapi):
    from accounts.selectors import ACCOUNT_QUERY

    schemas = openapi["components"]["schemas"]
    operation = openapi["paths"]["/api/v1/accounts/bulk/{detail_level}"]["post"]
    body = schemas[operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]]
    query = body["properties"]["itemQuery"]["properties"]
    names = {n for branch in query["filter"]["items"]["anyOf"] for n in branch["properties"]["fieldName"]["enum"]}
    assert names == set(ACCOUNT_QUERY.fields)
    assert query["limit"]["maximum"] == ACCOUNT_QUERY.max_limit
    page = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    levels = {ref["$ref"].rsplit("/", 1)[-1] for ref in schemas[page]["anyOf"]}
    assert levels == {"BulkAccountsOutput", "BulkAccountsCompactOutput", "BulkAccountsIdentifiersOutput"}
    assert schemas["AccountCompactOutput"]["additionalProperties"] is False


def test_own_lookups_refuse_other_organizations_and_text_refuses_nul(openapi):
    schemas = openapi["components"]["schemas"]
    assert schemas["OwnLookupRequest"]["properties"]["otherTenantOrganizationExternalId"]["enum"] == [None]
    assert schemas["UpdateAccountItemRequest"]["properties"]["account"] == {"$ref": "#/components/schemas/OwnLookupRequest"}
    assert schemas["OffchainReferencesRequest"]["properties"]["code"]["pattern"].startswith("^[^\\u0000]*")


def test_a_scaled_ui_amount_multiplier_is_positive_and_normal_wherever_it_is_given(openapi):
    # Found by schemathesis: Update took 0 as schema-valid and answered 400 OUT_OF_RANGE; then
    # 5e-324 (subnormal), which Token-2022 refuses. The smallest normal double is the minimum.
    import sys

    schemas = openapi["components"]["schemas"]
    for name in ("CreateInstrumentItemRequest", "UpdateInstrumentItemRequest"):
        multiplier = schemas[name]["properties"]["scaledUiAmountMultiplier"]
        assert multiplier["minimum"] == sys.float_info.min and not multiplier.get("exclusiveMinimum"), name


@pytest.mark.parametrize(("role", "given", "valid"), [
    ("TransferHook", {"currentTransferHookAuthority"}, False),
    ("TransferHook", {"currentTransferHookAuthority", "newTransferHookAuthority"}, True),
    ("Closing", {"newClosingAuthority"}, True),
    ("Pausable", {"currentPausableAuthority"}, False),
    ("ScaledUiAmount", {"currentScaledUiAmountAuthority"}, False),
])
def test_update_states_that_a_current_authority_goes_with_the_new_one(openapi, role, given, valid):
    # Found by schemathesis: a schema-valid Update naming currentTransferHookAuthority alone
    # was refused 400 REQUIRED (instruments/services.py: "current… goes with new…").
    import jsonschema

    body = {"mintAccount": {"offchainId": "00000000-0000-0000-0000-000000000001"}, **{name: {"offchainId": "00000000-0000-0000-0000-000000000002"} for name in given}}
    validator = jsonschema.Draft4Validator({"$ref": "#/components/schemas/UpdateInstrumentItemRequest", "components": openapi["components"]})
    assert validator.is_valid(body) is valid


def _nodes(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def test_every_address_states_its_alphabet_and_lengths(openapi):
    """Found by an outside schemathesis run that does not know format base58-address: it
    sent "" (400 REQUIRED) and arbitrary strings (400 INVALID_ADDRESS) as schema-valid
    lookups. Every address — lookups' onchainId, new accounts' publickKey, address lookup
    tables, ONCHAIN_ADDRESS_ID filter values — states the base58 pattern and 32–44 characters."""
    import re

    from solders.pubkey import Pubkey

    addresses = [node for node in _nodes(openapi) if node.get("format") == "base58-address"]
    assert len(addresses) > 20
    for node in addresses:
        assert node["pattern"] == "^[1-9A-HJ-NP-Za-km-z]{32,44}$" and node["minLength"] == 32 and node["maxLength"] == 44, node
    schemas = openapi["components"]["schemas"]
    onchain = schemas["LookupRequest"]["properties"]["onchainId"]
    pattern = re.compile(onchain["pattern"])
    for refused in ("", "0" * 32, "I" * 40, "l" * 40, "x" * 45, "abc"):
        assert not pattern.search(refused) or not onchain["minLength"] <= len(refused) <= onchain["maxLength"], refused
    for accepted in (str(Pubkey.default()), str(Pubkey.from_bytes(b"\xff" * 32))):
        assert pattern.search(accepted) and onchain["minLength"] <= len(accepted) <= onchain["maxLength"], accepted


def test_outbound_urls_admit_http_where_the_server_may_take_it(openapi):
    """README's `make run` example registers http://127.0.0.1:… (the embedded mode takes it);
    the document said https only. The schema admits both schemes; the server still refuses
    plain http outside the embedded mode or DEBUG (webhooks/tests/test_webhooks_api.py,
    test_loopback_and_http_are_refused_unless_the_settings_allow_them)."""
    import re

    schemas = openapi["components"]["schemas"]
    props = [schemas["CreateWebhookItemRequest"]["properties"]["endpointUrl"], schemas["WebhookOAuth2AuthInputRequest"]["properties"]["accessTokenUrl"]]
    for prop in props:
        pattern = re.compile(prop["pattern"])
        assert pattern.search("http://127.0.0.1:8000/hook") and pattern.search("https://hooks.example/tx")
        assert not pattern.search("ftp://hooks.example/tx") and not pattern.search("https://user:pw@hooks.example/tx")
        assert "production" in prop["description"] and prop["format"] == "outbound-url"
