"""The schemathesis run's hooks (scripts/schemathesis_hooks.py): which seeded record each
lookup of the OpenAPI names, how a generated lookup is rewritten, derived request ids, and
the checks that hold the answers to docs/errors.md. The run itself is `make schemathesis`."""

from __future__ import annotations

import copy
import uuid

import pytest

from scripts import schemathesis_checks as checks
from scripts import schemathesis_hooks as hooks
from scripts import schemathesis_request_ids as request_ids
from scripts.schemathesis_seed import ROLES

LOOKUP_COMPONENTS = {"LookupRequest", "OwnLookupRequest", "InstrumentLookupRequest", "OwnInstrumentLookupRequest", "TransactionIdentifierRequest", "LookupTableLookupRequest",
                     "VaultLookupRequest", "WebhookIdentifierRequest", "DataSourceLookupRequest"}

SEED = {
    "organization": "SCHEMATHESIS",
    "apiKey": {"keyId": "ak_run", "secret": "lsk_run"},
    "records": {
        "funder": {"onchainId": "F" * 44, "offchainId": str(uuid.UUID(int=1)), "code": "ST-FUNDER"},
        "authority": {"onchainId": "A" * 44, "offchainId": str(uuid.UUID(int=2)), "code": "ST-AUTHORITY"},
        "subject": {"onchainId": "S" * 44, "offchainId": str(uuid.UUID(int=3)), "code": "ST-SUBJECT"},
        "victim": {"onchainId": "V" * 44, "offchainId": str(uuid.UUID(int=4)), "code": "ST-VICTIM"},
        "instrument": {"onchainId": "J" * 44, "offchainId": str(uuid.UUID(int=5)), "code": "ST-INSTRUMENT", "alId": "ALFICBD00000001"},
        "closable": {"onchainId": "C" * 44, "offchainId": str(uuid.UUID(int=6)), "code": "ST-CLOSABLE", "alId": "ALFICBD00000002"},
        "transaction": {"onchainId": "T" * 88, "offchainId": str(uuid.UUID(int=7))},
    },
}


@pytest.fixture(scope="module")
def openapi(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def _refs(schema: dict) -> list[str]:
    found = [schema["$ref"].rsplit("/", 1)[-1]] if "$ref" in schema else []
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, []):
            found += _refs(branch)
    return found


def _lookups(components: dict, name: str, where: tuple[str, ...], seen: frozenset) -> set[tuple[str, ...]]:
    if name in LOOKUP_COMPONENTS:
        return {where}
    if name in seen:
        return set()
    found = set()
    for prop, schema in components[name].get("properties", {}).items():
        for ref in _refs(schema):
            found |= _lookups(components, ref, (*where, prop), seen | {name})
    return found


def test_every_lookup_of_the_openapi_is_mapped_to_a_seeded_record(openapi):
    components = openapi["components"]["schemas"]
    in_schema = set()
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            for ref in _refs(body):
                in_schema |= {(method.upper(), path, where) for where in _lookups(components, ref, (), frozenset())}
    mapped = {(method, path, where) for (method, path), fields in hooks.LOOKUPS.items() for where in fields}
    assert in_schema == mapped
    assert {role for fields in hooks.LOOKUPS.values() for role in fields.values() if role} <= set(ROLES)


def test_a_generated_lookup_names_the_seeded_record_the_same_way():
    record = SEED["records"]["instrument"]
    assert hooks.lookup_naming(record, {"offchainId": str(uuid.uuid4()), "autoSign": True}) == {"offchainId": record["offchainId"], "autoSign": True}
    assert hooks.lookup_naming(record, {"onchainId": "x" * 32, "offPlatform": None, "otherTenantOrganizationExternalId": "OTHER"}) == {
        "onchainId": record["onchainId"], "offPlatform": None, "otherTenantOrganizationExternalId": None}
    assert hooks.lookup_naming(record, {"offchainReferences": {"alId": "ALX", "name": "n"}}) == {"offchainReferences": {"alId": record["alId"]}}
    assert hooks.lookup_naming(record, {"offchainReferences": {"code": "c"}}) == {"offchainReferences": {"code": record["code"]}}
    transaction = SEED["records"]["transaction"]  # no code: named by its ids
    assert hooks.lookup_naming(transaction, {"onchainId": "sig"}) == {"onchainId": transaction["onchainId"]}


def test_seeded_body_rewrites_the_mapped_lookups_and_the_override_only():
    generated = {
        "itemData": {
            "financialInstrumentToClose": {"onchainId": "x" * 32, "otherTenantOrganizationExternalId": None},
            "refundDestination": {"offchainReferences": {"accountNumber": "9"}},
            "closeAuthority": None,
        },
        "svmTransactionConfig": {"feePayer": {"offchainId": str(uuid.uuid4())}, "computeUnitConfig": None},
        "tenancyConfig": {"overrideOrganizationExternalId": "SOMEONE-ELSE"},
    }
    before = copy.deepcopy(generated)

    body = hooks.seeded_body("patch", "/api/v1/financial-instruments/close", generated, SEED)

    records = SEED["records"]
    assert body["itemData"] == {
        "financialInstrumentToClose": {"onchainId": records["closable"]["onchainId"], "otherTenantOrganizationExternalId": None},
        "refundDestination": {"offchainReferences": {"code": records["authority"]["code"]}},
        "closeAuthority": None,  # null stays null
    }
    assert body["svmTransactionConfig"] == {"feePayer": {"offchainId": records["funder"]["offchainId"]}, "computeUnitConfig": None}
    assert body["tenancyConfig"] == {"overrideOrganizationExternalId": "SCHEMATHESIS"}
    assert generated == before  # the generated value is not changed in place


def test_seeded_body_leaves_unmapped_lookups_and_non_objects_alone():
    hook_program = {"onchainId": "x" * 32, "offPlatform": True}
    body = hooks.seeded_body("POST", "/api/v1/financial-instruments", {"itemData": {"transferHookProgram": hook_program, "mintAuthority": {"offchainId": "x"}}}, SEED)
    assert body["itemData"]["transferHookProgram"] == hook_program
    assert body["itemData"]["mintAuthority"] == {"offchainId": SEED["records"]["authority"]["offchainId"]}
    assert hooks.seeded_body("POST", "/api/v1/accounts/single", [1, 2], SEED) == [1, 2]
    assert hooks.seeded_body("POST", "/api/v1/accounts/single", {"itemData": "text"}, SEED) == {"itemData": "text"}
    assert hooks.seeded_body("POST", "/api/v1/auth/whoami", {"tenancyConfig": {"overrideOrganizationExternalId": ""}}, SEED) == {"tenancyConfig": {"overrideOrganizationExternalId": ""}}


def test_lookup_table_component_lists_become_fresh_off_platform_addresses():
    generated = {"itemData": {"addressLookupTable": {"onchainId": "x" * 32}, "componentAddresses": [{"offchainId": str(uuid.uuid4())}, {"onchainId": "y" * 32}, None]}}
    body = hooks.seeded_body("PATCH", "/api/v1/address-lookup-tables/extend", generated, {**SEED, "records": {**SEED["records"], "lookupTable": {"onchainId": "L" * 44, "offchainId": str(uuid.UUID(int=9))}}})
    fresh = body["itemData"]["componentAddresses"]
    assert [set(c) for c in fresh[:2]] == [{"onchainId", "offPlatform"}] * 2 and fresh[0]["offPlatform"] is True and fresh[2] is None
    assert fresh[0]["onchainId"] != fresh[1]["onchainId"] and body["itemData"]["addressLookupTable"] == {"onchainId": "L" * 44}
    assert hooks.seeded_body("POST", "/api/v1/positions/trade", {"itemData": {"componentAddresses": [{"offchainId": "x"}]}}, SEED)["itemData"]["componentAddresses"] == [{"offchainId": "x"}]


def test_issue_access_token_gets_the_runs_key_as_client_credentials():
    body = hooks.seeded_body("POST", "/api/v1/auth/token", {"grant_type": "client_credentials", "client_id": "x", "client_secret": "y"}, SEED)
    assert body == {"grant_type": "client_credentials", "client_id": "ak_run", "client_secret": "lsk_run"}
    assert hooks.seeded_body("POST", "/api/v1/auth/whoami", {"client_id": "x"}, SEED) == {"client_id": "x"}


def test_every_call_gets_a_fresh_request_id_unless_the_id_is_the_broken_part():
    """An outside run answered 52 % of its cases 409 REQUEST_ID_REUSED: the coverage phase
    reuses one x-request-id for different requests. Every call of ours gets its own."""
    first, second = request_ids.fresh_request_id({"x-request-id": "0b5c4f1e-5d1a-4c59-9a43-7c8e2f3b6a10"}), request_ids.fresh_request_id({"x-request-id": "0b5c4f1e-5d1a-4c59-9a43-7c8e2f3b6a10"})
    assert first["x-request-id"] != second["x-request-id"] != "0b5c4f1e-5d1a-4c59-9a43-7c8e2f3b6a10"
    assert str(uuid.UUID(first["x-request-id"])) == first["x-request-id"]
    absent = request_ids.fresh_request_id({"Authorization": "Bearer x"})
    assert absent["Authorization"] == "Bearer x" and hooks._is_uuid(absent["x-request-id"])
    assert request_ids.fresh_request_id({"x-request-id": "not-a-uuid"}) == {"x-request-id": "not-a-uuid"}  # a negative case: its 400 INVALID_REQUEST_ID


def test_the_tally_counts_cases_kept_from_the_operation_by_their_request_id():
    tally = request_ids.Tally()
    tally.add(201, None, False)
    tally.add(409, ["REQUEST_ID_REUSED"], False)
    tally.add(201, None, True)
    tally.add(409, ["OPERATION_IN_PROGRESS"], False)
    assert tally.as_dict() == {"cases": 4, "reached": 2, "requestIdReused": 1, "replayed": 1}


@pytest.mark.parametrize(("body", "decidable"), [
    ({"itemData": {"postTransactionSubmitWebhooks": [{"endpointUrl": "https://8.8.8.8/hook"}]}}, True),
    ({"itemData": {"hooks": [{"oauth2AuthConfig": {"accessTokenUrl": "https://" + "0" * 490}}]}}, False),
    ({"itemData": {"endpointUrl": "https://10.0.0.1/x"}}, False),
    ({"itemData": {"endpointUrl": "https://hooks.example.com/x"}}, False),  # a matter of DNS
    ({"itemData": {"name": "no urls"}}, True),
])
def test_positive_outbound_urls_are_kept_only_when_the_format_is_decidable(body, decidable):
    assert hooks._outbound_urls_decidable(body) is decidable


def test_docs_errors_is_read_status_by_status():
    documented = checks._documented()
    assert {(400, "TOO_MANY_KEYS"), (400, "TOO_LARGE"), (400, "INVALID_LOOKUP"), (400, "AMBIGUOUS_LOOKUP"), (404, "CONFLICTING_LOOKUP"),
            (404, "ACCOUNT_NOT_ONCHAIN"), (400, "ACCOUNT_NOT_ONCHAIN"), (400, "REFUND_DESTINATION_REQUIRED"), (409, "OPERATION_IN_PROGRESS")} <= documented
    assert (400, "CONFLICTING_LOOKUP") not in documented
    assert checks.documented_codes("| 409 | `A`, `B` / `C` | when |\n| Status | Code | When |\ntext `D`") == {(409, "A"), (409, "B"), (409, "C")}


def test_a_valid_request_may_be_refused_400_only_for_a_documented_rule():
    documented = checks._documented()
    assert checks.refused_as_invalid(400, ["ALREADY_PAUSED"], documented) == []
    assert checks.refused_as_invalid(400, ["FUNDING_ACCOUNT_REQUIRED", "REQUIRED"], documented) == ["REQUIRED"]
    assert checks.refused_as_invalid(400, ["SOMETHING_NEW"], documented) == ["SOMETHING_NEW"]
    assert checks.refused_as_invalid(404, ["REQUIRED"], documented) == []
    assert checks.refused_as_invalid(400, None, documented) == []


def test_every_error_code_must_be_documented_with_its_status():
    documented = checks._documented()
    assert checks.undocumented(409, ["OPERATION_IN_PROGRESS"], documented) == []
    assert checks.undocumented(400, ["NULL_CHARACTERS_NOT_ALLOWED", "INVALID"], documented) == ["NULL_CHARACTERS_NOT_ALLOWED"]
    assert checks.undocumented(400, ["CONFLICTING_LOOKUP"], documented) == ["CONFLICTING_LOOKUP"]
    assert checks.undocumented(200, ["ANYTHING"], documented) == []


def test_positive_addresses_must_decode_to_32_bytes():
    address = "11111111111111111111111111111111"
    signature = "fiK3aJ8Kps1Hq3QJg9TjghkiZQMxnJXwURy9bpJZQ9r8H6DmZEhdYbU9nzNd3TCX3oSeAjapBAe8BEQ6VL7ut9g"
    assert hooks.addresses_decodable({"itemData": {"transferHookProgram": {"onchainId": address}}})
    assert not hooks.addresses_decodable({"itemData": {"transferHookProgram": {"onchainId": signature}}})
    assert not hooks.addresses_decodable({"svmTransactionConfig": {"addressLookupTables": [address, "1" * 44]}})
    assert not hooks.addresses_decodable({"itemQuery": {"filter": [{"fieldName": "onchainId", "filterValues": [{"dataType": "ONCHAIN_ADDRESS_ID", "valuesString": [signature]}]}]}})
    assert hooks.addresses_decodable({"itemQuery": {"filter": [{"filterValues": [{"dataType": "TEXT", "valueString": signature}]}]}})
    assert hooks.addresses_decodable({"itemData": {"transaction": {"onchainId": signature}}}, signatures=True)


def test_a_transaction_identifier_is_not_checked_as_an_address_but_signers_are():
    signature, address = "5" * 88, "11111111111111111111111111111111"
    body = {"itemData": {"transaction": {"onchainId": signature}, "offPlatformSigning": [{"account": {"onchainId": address}, "signature": signature}]}}
    assert hooks.addresses_decodable(hooks.without_transaction_identifier(body))
    body["itemData"]["onPlatformSigning"] = [{"onchainId": signature}]
    assert not hooks.addresses_decodable(hooks.without_transaction_identifier(body))
    assert hooks.without_transaction_identifier([1]) == [1]


def test_a_platform_address_is_seeded_into_one_lookup_of_a_body():
    body = {"itemData": {"source": {"offchainId": "a"}, "destination": {"onchainId": "b"}, "value": {"lamports": 1}}}
    first = hooks.with_platform_address(body, "FEE", 0)
    second = hooks.with_platform_address(body, "FEE", 1)
    assert first["itemData"]["source"] == {"onchainId": "FEE"} and first["itemData"]["destination"] == {"onchainId": "b"}
    assert second["itemData"]["destination"] == {"onchainId": "FEE"} and second["itemData"]["source"] == {"offchainId": "a"}
    assert body["itemData"]["source"] == {"offchainId": "a"}  # the generated body stays untouched
    assert hooks.with_platform_address({"itemData": {"value": 1}}, "FEE", 0) is None


def test_a_message_with_a_platform_key_outside_the_fee_payer_slot_is_reported():
    import base64

    from solders.hash import Hash
    from solders.keypair import Keypair
    from solders.message import Message
    from solders.system_program import TransferParams, transfer

    payer, other = Keypair().pubkey(), Keypair().pubkey()

    def b64(message) -> str:
        return base64.b64encode(bytes(message)).decode()

    fee_only = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=other, to_pubkey=Keypair().pubkey(), lamports=1))], payer, Hash.default())
    spends = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer, to_pubkey=other, lamports=1))], payer, Hash.default())
    receives = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=other, to_pubkey=payer, lamports=1))], other, Hash.default())
    assert checks.platform_misuse(b64(fee_only), {str(payer)}) is None
    assert "signer or writable" in checks.platform_misuse(b64(spends), {str(payer)})
    assert checks.platform_misuse(b64(receives), {str(payer)}) is not None


def _address_keys(node, key=None, found=None) -> set:
    found = set() if found is None else found
    if isinstance(node, dict):
        if node.get("format") == "base58-address" and key is not None:
            found.add(key)
        for name, value in node.items():
            if name == "properties" and isinstance(value, dict):
                for prop, schema in value.items():
                    _address_keys(schema, prop, found)
            else:
                _address_keys(value, key, found)
    elif isinstance(node, list):
        for value in node:
            _address_keys(value, key, found)
    return found


def test_every_address_property_of_a_request_is_checked_for_32_bytes(openapi):
    """With the pattern and lengths stated, the coverage phase drew loanStrategyAddress
    values of 43 "1"s from them (43 zero bytes: 400 INVALID_ADDRESS), which the filter did
    not check: every request property holding one address is in ADDRESS_KEYS."""
    requests = {name: schema for name, schema in openapi["components"]["schemas"].items() if name.endswith("Request")}
    single = _address_keys(requests) - {"addressLookupTables", "valueString", "valuesString"}  # lists and filter values: checked apart
    assert single == set(hooks.ADDRESS_KEYS)
    assert not hooks.addresses_decodable({"itemData": {"partnerLendingDetails": {"loanStrategyAddress": "1" * 43}}})
    assert hooks.addresses_decodable({"itemData": {"partnerLendingDetails": {"loanStrategyAddress": "1" * 32}}})


def test_webhook_api_keys_state_the_header_rules_the_server_applies(openapi):
    """schemathesis sent an instrument's webhook an httpHeaderName and keyValue the schema
    admitted (only "no NUL") and the server refused (INVALID, INVALID_HEADER_VALUE)."""
    import re

    from webhooks.serializers import header_name, header_value

    schemas = openapi["components"]["schemas"]
    for name in ("WebhookApiKeyAuthInputRequest", "WebhookApiKeyRequest"):
        props = schemas[name]["properties"]
        for value in ("X-Api-Key", "x-key.1"):
            assert re.search(props["httpHeaderName"]["pattern"], value)
            header_name(value)
        for value in ("Bad Header", "X:Key", "é"):
            assert not re.search(props["httpHeaderName"]["pattern"], value), value
        for value in ("k", "Bearer abc.def", "a\tb c"):
            assert re.fullmatch(props["keyValue"]["pattern"], value)
            header_value(value)
        for value in ("a\r\nb", " lead", "trail ", "clé", "a\x00b"):
            assert not re.fullmatch(props["keyValue"]["pattern"], value), value
