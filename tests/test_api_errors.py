"""The error model: every failure leaves in {"errors": [{code, message, field}], "requestId"}."""

import uuid

import pytest

from conftest import assert_error
from tenancy.models import TenantOrganization

PROBE = "/test/probe"
pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.support.urls")]


def test_malformed_json_is_400(api):
    response = api.post(PROBE, data="{not json", content_type="application/json")
    assert_error(response, 400, "MALFORMED_JSON")


def test_non_json_content_type_is_415(api):
    response = api.post(PROBE, data="a=b", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_missing_required_field_names_it(api):
    assert_error(api.call("post", PROBE, {"itemData": {}}), 400, "REQUIRED", "itemData.externalId")


def test_missing_item_data_names_it(api):
    assert_error(api.call("post", PROBE, {}), 400, "REQUIRED", "itemData")


def test_wrong_type_names_field(api):
    assert_error(api.call("post", PROBE, {"itemData": {"externalId": "X", "count": "many"}}), 400, "INVALID", "itemData.count")


def test_out_of_range_number_names_field(api):
    assert_error(api.call("post", PROBE, {"itemData": {"externalId": "X", "count": 11}}), 400, "OUT_OF_RANGE", "itemData.count")


def test_unknown_enum_value_names_field(api):
    assert_error(api.call("post", PROBE, {"itemData": {"externalId": "X", "kind": "C"}}), 400, "INVALID_ENUM", "itemData.kind")


def test_bad_uuid_names_field(api):
    assert_error(api.call("post", PROBE, {"itemData": {"externalId": "X", "ref": "nope"}}), 400, "INVALID", "itemData.ref")


def test_unknown_field_names_it(api):
    assert_error(api.call("post", PROBE, {"itemData": {"externalId": "X", "extId": "typo"}}), 400, "UNKNOWN_FIELD", "itemData.extId")


def test_several_errors_are_all_listed(api):
    body = assert_error(api.call("post", PROBE, {"itemData": {"count": -1, "kind": "Z"}}), 400)
    assert {e["field"] for e in body["errors"]} == {"itemData.externalId", "itemData.count", "itemData.kind"}


def test_bad_input_changes_nothing(api):
    before = TenantOrganization.objects.count()
    api.call("post", PROBE, {"itemData": {"externalId": "X", "count": 99}})
    assert TenantOrganization.objects.count() == before


def test_unknown_url_is_json_404(api):
    assert_error(api.get("/api/v1/nowhere"), 404, "NOT_FOUND")


def test_wrong_method_is_405(api):
    assert_error(api.call("put", PROBE, {}), 405, "METHOD_NOT_ALLOWED")


def test_request_id_is_echoed_in_error_and_header(api):
    rid = str(uuid.uuid4())
    response = api.call("post", PROBE, {}, request_id=rid)
    assert response.json()["requestId"] == rid
    assert response["x-request-id"] == rid


def test_malformed_request_id_is_400(api):
    response = api.call("post", PROBE, {"itemData": {"externalId": "X"}}, HTTP_X_REQUEST_ID="not-a-uuid")
    assert_error(response, 400, "INVALID_REQUEST_ID", "x-request-id")
    assert not TenantOrganization.objects.filter(external_id="X").exists()


def test_unexpected_exception_is_500_without_trace_and_rolls_back(api, caplog):
    rid = uuid.uuid4()
    response = api.call("post", PROBE, {"itemData": {"externalId": "CRASH1"}}, request_id=rid)
    body = assert_error(response, 500, "INTERNAL_ERROR")
    assert "Traceback" not in response.content.decode() and "boom" not in response.content.decode()
    assert body["requestId"] == str(rid)
    assert not TenantOrganization.objects.filter(external_id="CRASH1").exists()
    assert any(getattr(r, "request_id", None) == str(rid) or "unhandled" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("item, field", [({"externalId": "X", "count": "5"}, "itemData.count"), ({"externalId": "X", "count": 5.5}, "itemData.count"),
                                         ({"externalId": 5}, "itemData.externalId"), ({"externalId": "X", "count": True}, "itemData.count")])
def test_json_types_are_strict(api, item, field):
    """"5" is not an integer and 5 is not a string: wrong JSON types are named, not coerced."""
    assert_error(api.call("post", PROBE, {"itemData": item}), 400, "INVALID", field)


def test_booleans_are_json_booleans(api, localnet_url):
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": "yes"}})
    assert_error(response, 400, "INVALID", "itemData.managed")


def test_error_list_is_capped_with_a_summary(api):
    """60,000 unknown keys are 20 listed errors plus one saying how many more, not a 4 MB
    body (which an idempotent request would also store)."""
    from tenancy.models import IdempotencyRecord

    rid = uuid.uuid4()
    item = {"externalId": "CAP", **{f"k{i:05d}": 1 for i in range(60_000)}}
    response = api.call("post", "/test/probe", {"itemData": item}, request_id=rid)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == 21
    assert {e["code"] for e in errors[:20]} == {"UNKNOWN_FIELD"} and errors[0]["field"] == "itemData.k00000"
    assert errors[20] == {"code": "TOO_MANY_ERRORS", "message": "59980 more errors not listed (at most 20 are listed).", "field": None}
    assert len(response.content) < 4096
    assert bytes(IdempotencyRecord.objects.get(request_id=rid).response_bytes) == response.content


def test_error_cap_applies_to_field_errors_too(api):
    """Every validation path: here one error per bad list entry."""
    response = api.call("post", "/test/probe", {"itemData": {"externalId": "CAP2", "tags": ["x"] * 33}})
    errors = response.json()["errors"]
    assert response.status_code == 400 and len(errors) == 21
    assert errors[0] == {"code": "INVALID", "message": "Must be an integer.", "field": "itemData.tags[0]"}
    assert errors[-1]["code"] == "TOO_MANY_ERRORS" and errors[-1]["message"].startswith("13 more errors")


def _documented_codes() -> set[tuple[int, str]]:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "errors.md").read_text()
    pairs = set()
    for match in re.finditer(r"^\|\s*(\d{3})\s*\|([^|]*)\|", text, re.M):
        pairs |= {(int(match.group(1)), code) for code in re.findall(r"`([A-Z][A-Z0-9_]*)`", match.group(2))}
    return pairs


@pytest.mark.parametrize(("field", "value"), [
    ("text", "a\x00b"),               # DRF: null_characters_not_allowed
    ("text", "a\ud800b"),             # surrogate_characters_not_allowed
    ("amount", "1234.5"),             # max_whole_digits
    ("amount", "12345.67"),           # max_digits
    ("amount", "1.234"),              # max_decimal_places
    ("items", []),                    # empty
    ("at", "tomorrow"),               # invalid
    ("meta", {"k": float("inf")}),     # FreeFormObjectField: not_finite
])
def test_field_errors_leave_with_codes_docs_errors_lists(field, value):
    # Found by schemathesis (error_codes_documented): DRF's own codes were upper-cased into
    # codes docs/errors.md does not list (NULL_CHARACTERS_NOT_ALLOWED, MAX_WHOLE_DIGITS, ...).
    from rest_framework import serializers

    from ledger_project.api.envelope import FreeFormObjectField
    from ledger_project.api.errors import flatten_validation

    class Sample(serializers.Serializer):
        text = serializers.CharField(required=False)
        amount = serializers.DecimalField(max_digits=5, decimal_places=2, required=False)
        items = serializers.ListField(child=serializers.IntegerField(), allow_empty=False, required=False)
        at = serializers.DateTimeField(required=False)
        meta = FreeFormObjectField(required=False)

    sample = Sample(data={field: value})
    assert not sample.is_valid()
    errors = flatten_validation(sample.errors)
    assert errors and all((400, e["code"]) in _documented_codes() for e in errors), errors
    assert {e["field"] for e in errors} == {field}


def test_our_own_upper_case_codes_pass_through_and_unknown_drf_codes_become_invalid():
    from rest_framework.exceptions import ErrorDetail

    from ledger_project.api.errors import flatten_validation

    errors = flatten_validation({"a": [ErrorDetail("x", code="INVALID_LOOKUP")], "b": [ErrorDetail("y", code="some_new_drf_code")]})
    assert [(e["field"], e["code"]) for e in errors] == [("a", "INVALID_LOOKUP"), ("b", "INVALID")]
