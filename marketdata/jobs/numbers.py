"""Decimal arithmetic of job evaluation and the feed's integer mantissa.

Numbers are ``Decimal`` end to end: JSON is parsed with ``parse_float=Decimal`` (integers
become Decimal too), never float. Every operation goes through :data:`CONTEXT`, an
explicit context (decimal's default context is per thread and mutable; evaluation runs in
threads): 40 significant digits, ROUND_HALF_EVEN, and division by zero, overflow and
invalid operations raise instead of giving Infinity/NaN.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow

PRECISION = 40
CONTEXT = Context(prec=PRECISION, rounding=ROUND_HALF_EVEN, Emin=-999_999, Emax=999_999, traps=[InvalidOperation, DivisionByZero, Overflow])

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
MAX_DECIMAL_CHARS = 64


class NotANumber(ValueError):
    """A value that is not a finite decimal number."""


def decimal_from_text(text: str) -> Decimal:
    """A finite Decimal from a decimal string ("12.5", "-3", "1e-8"), or NotANumber. No
    NaN, Infinity, surrounding spaces, underscores or more than 64 characters."""
    if not isinstance(text, str) or not text or len(text) > MAX_DECIMAL_CHARS or text.strip() != text or "_" in text:
        raise NotANumber(f"not a decimal string: {text[:MAX_DECIMAL_CHARS]!r}" if isinstance(text, str) else "not a decimal string")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise NotANumber(f"not a decimal string: {text!r}") from None
    if not value.is_finite():
        raise NotANumber(f"not a finite number: {text!r}")
    return value


def decimal_from_json(value) -> Decimal:
    """A JSON value (parsed with parse_float=Decimal) as a finite Decimal: a number, or a
    string holding one (many price APIs quote prices as strings). Booleans, null, objects
    and arrays are NotANumber."""
    if isinstance(value, bool) or value is None:
        raise NotANumber(f"found {str(value).lower() if value is not None else 'null'}, not a number")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NotANumber("not a finite number")
        return value
    if isinstance(value, str):
        return decimal_from_text(value)
    kind = "an object" if isinstance(value, dict) else "an array" if isinstance(value, list) else type(value).__name__
    raise NotANumber(f"found {kind}, not a number")


def median(values: list[Decimal]) -> Decimal:
    """The middle value; for an even count the mean of the two middle ones."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return CONTEXT.divide(CONTEXT.add(ordered[middle - 1], ordered[middle]), 2)


def mean(values: list[Decimal]) -> Decimal:
    total = Decimal(0)
    for value in values:
        total = CONTEXT.add(total, value)
    return CONTEXT.divide(total, len(values))


def deviation_percent(value: Decimal, reference: Decimal) -> Decimal | None:
    """|value − reference| as a percentage of |reference|; None (infinitely far) when the
    reference is 0 and the value is not."""
    difference = CONTEXT.abs(CONTEXT.subtract(value, reference))
    if reference == 0:
        return Decimal(0) if difference == 0 else None
    return CONTEXT.divide(CONTEXT.multiply(difference, 100), CONTEXT.abs(reference))


class MantissaError(ValueError):
    """The value cannot be a feed mantissa: not finite, or outside the i64 range."""


def to_mantissa(value: Decimal, exponent: int) -> int:
    """The integer ``m`` with ``value ≈ m × 10^exponent`` (a feed stores a price as an i64
    mantissa and a power-of-ten exponent: 27123.456789 at exponent −8 is 2712345678900).

    Rounded once, to nearest with ties to even (ROUND_HALF_EVEN: 0.5 → 0, 1.5 → 2, −2.5 →
    −2), from the exact value: the shift by ``exponent`` is exact (only the Decimal's
    exponent changes), so no intermediate rounding happens. MantissaError when ``value``
    is not finite or the result is outside [−2^63, 2^63 − 1]."""
    if not isinstance(value, Decimal) or not value.is_finite():
        raise MantissaError(f"not a finite Decimal: {value!r}")
    if isinstance(exponent, bool) or not isinstance(exponent, int):
        raise MantissaError(f"the exponent must be an integer, not {exponent!r}")
    sign, digits, own_exponent = value.as_tuple()
    shifted = Decimal((sign, digits, own_exponent - exponent))
    # Before making an int of it: a value of 10^999999 must not become a million-digit int.
    if shifted.adjusted() > 19:
        raise MantissaError(f"{value} at exponent {exponent} does not fit in a signed 64-bit mantissa")
    integral = int(shifted.quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=Context(prec=PRECISION, rounding=ROUND_HALF_EVEN)))
    if not I64_MIN <= integral <= I64_MAX:
        raise MantissaError(f"{value} at exponent {exponent} does not fit in a signed 64-bit mantissa")
    return integral
