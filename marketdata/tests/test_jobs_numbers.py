"""JSON paths and the numbers of job evaluation (docs/marketdata.md, "JSON paths", "Numbers")."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from marketdata.jobs import MantissaError, to_mantissa
from marketdata.jobs.jsonpath import JsonPathNoValue, JsonPathSyntaxError, parse
from marketdata.jobs.numbers import NotANumber, decimal_from_json, mean, median

DOCUMENT = json.loads('{"result": {"price": "27123.45", "list": [1, 2.50, {"px": 3}]}, "usd-coin": {"usd": 1.0001}, "a b": {"\'q\'": 7}, "é": 8}',
                      parse_float=Decimal)


@pytest.mark.parametrize(("path", "segments", "found"), [
    ("$", (), DOCUMENT),
    ("$.result.price", ("result", "price"), "27123.45"),
    ("$.result.list[1]", ("result", "list", 1), Decimal("2.50")),
    ("$.result.list[-1].px", ("result", "list", -1, "px"), 3),
    ("$['usd-coin'].usd", ("usd-coin", "usd"), Decimal("1.0001")),
    ('$["usd-coin"]["usd"]', ("usd-coin", "usd"), Decimal("1.0001")),
    ("$['a b']['\\'q\\'']", ("a b", "'q'"), 7),
    ("$['a\\u0020b']", ("a b",), {"'q'": 7}),
    ("$.é", ("é",), 8),
])
def test_a_path_finds_one_value(path, segments, found):
    parsed = parse(path)
    assert parsed.segments == segments and parsed.find(DOCUMENT) == found


@pytest.mark.parametrize(("path", "where"), [
    ("", "starting with '$'"), ("result", "starts with '$'"), ("$.", "character 2"), ("$..price", "not supported"), ("$.*", "not supported"),
    ("$[*]", "not supported"), ("$[0:2]", "not supported"), ("$[0,1]", "not supported"), ("$[?(@.a)]", "not supported"),
    ("$.1abc", "character 2"), ("$[01]", "leading zeros"), ("$[-0]", "leading zeros"), ("$['x'", "expected ']'"), ("$['x", "unclosed"),
    ("$['\\x']", "unknown escape"), ("$[x]", "quoted name or an index"), ("$.a b", "character 3"), ("$" + ".a" * 33, "32 segments"),
    ("$." + "a" * 300, "256 characters"),
])
def test_a_path_outside_the_subset_is_refused_saying_where(path, where):
    with pytest.raises(JsonPathSyntaxError, match=None) as refused:
        parse(path)
    assert where in str(refused.value)


@pytest.mark.parametrize(("path", "message"), [
    ("$.result.volume", "$.result has no member 'volume'"),
    ("$.result.list[3]", "$.result.list has 3 elements: no [3]"),
    ("$.result.price.x", "$.result.price is a string, not an object"),
    ("$.result[0]", "$.result is an object, not an array"),
    ("$['usd-coin'].usd.x", "$['usd-coin'].usd is a number, not an object"),
])
def test_a_path_without_a_value_says_which_segment_missed(path, message):
    with pytest.raises(JsonPathNoValue) as missing:
        parse(path).find(DOCUMENT)
    assert message in str(missing.value)


@pytest.mark.parametrize(("raw", "expected"), [(Decimal("1.10"), Decimal("1.10")), (7, Decimal(7)), ("27123.45", Decimal("27123.45")), ("-1e-8", Decimal("-1e-8"))])
def test_numbers_and_numeric_strings_are_exact_decimals(raw, expected):
    found = decimal_from_json(raw)
    assert found == expected and isinstance(found, Decimal) and str(found) == str(expected)


@pytest.mark.parametrize("raw", [True, None, "abc", "", " 1", "1_000", "NaN", "-Infinity", Decimal("NaN"), {"a": 1}, [1], 1.5, "1" * 65])
def test_anything_else_is_not_a_number(raw):
    with pytest.raises(NotANumber):
        decimal_from_json(raw)


def test_median_and_mean():
    assert median([Decimal(3), Decimal(1), Decimal(2)]) == 2
    assert median([Decimal("100.5"), Decimal("101.5")]) == Decimal("101")
    assert mean([Decimal(1), Decimal(2), Decimal(2)]) == Decimal("1.666666666666666666666666666666666666667")  # 40 digits, half even


@pytest.mark.parametrize(("value", "exponent", "mantissa"), [
    ("27123.456789", -8, 2_712_345_678_900),
    ("0.5", 0, 0), ("1.5", 0, 2), ("2.5", 0, 2), ("-2.5", 0, -2), ("-0.5", 0, 0),
    ("2.675", -2, 268), ("2.665", -2, 266), ("1E+3", 0, 1000), ("123", 2, 1), ("150", 2, 2), ("250", 2, 2),
    ("2.5000000000000000000000000000000000000000000001", 0, 3),  # rounded once, from the exact value (not at 40 digits first)
    ("1e-999999", -8, 0),
    ("9223372036854775807", 0, 2**63 - 1), ("-9223372036854775808", 0, -(2**63)),
    ("92233720368.547758074", -8, 2**63 - 1),
])
def test_a_value_becomes_a_mantissa_rounded_half_even(value, exponent, mantissa):
    assert to_mantissa(Decimal(value), exponent) == mantissa


@pytest.mark.parametrize(("value", "exponent"), [
    (Decimal("9223372036854775808"), 0), (Decimal("-9223372036854775809"), 0), (Decimal("92233720368.547758075"), -8),
    (Decimal("1e999999"), -8), (Decimal("NaN"), 0), (Decimal("Infinity"), 0), (1.5, 0), ("1", 0), (Decimal(1), True), (Decimal(1), 1.0),
])
def test_a_mantissa_outside_i64_or_from_a_non_decimal_is_refused(value, exponent):
    with pytest.raises(MantissaError):
        to_mantissa(value, exponent)
