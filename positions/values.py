"""Spec "Value" for tokens: ``amount`` in display units, ``lamports`` in base units.

Rules (docs/positions.md, "Value"):
- give either; both given must name the same base-unit amount, else 400 VALUE_MISMATCH;
- base units are an integer in 1..u64 max (0 only where an operation allows it);
- ``amount`` may have at most the mint's decimals; for a Scaled UI Amount mint it is the
  displayed amount, ``base = amount × 10^decimals ÷ multiplier``, rounded down (the service
  never moves more than asked; an amount that rounds to 0 base units is refused), and
  displayed amounts are ``base × multiplier ÷ 10^decimals`` truncated to the decimals —
  the Token-2022 program's own UI conversion.
The multiplier is the chain's f64; it is read exactly (``Decimal(float)``), never used as
a float in arithmetic.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal, localcontext

from ledger_project.api.errors import LedgerError
from ledger_project.api.renderers import DisplayDecimal

U64_MAX = 2**64 - 1


def _multiplier(instrument) -> Decimal | None:
    m = getattr(instrument, "scaled_ui_multiplier", None)
    if m is None or "SCALED_UI_AMOUNT" not in (instrument.extensions or []):
        return None
    return Decimal(m)


def base_units(value: dict, instrument, *, field: str, allow_zero: bool = False) -> int:
    """The base units a validated Value names for ``instrument`` (see the module rules)."""
    amount, lamports = value.get("amount"), value.get("lamports")
    if amount is None and lamports is None:
        raise LedgerError("Give amount or lamports.", field=field, code="REQUIRED")
    decimals = int(instrument.decimals)
    from_amount = None
    if amount is not None:
        amount = Decimal(amount)
        if amount < 0:
            raise LedgerError("amount must not be negative.", field=f"{field}.amount", code="INVALID_AMOUNT")
        if amount.scaleb(decimals) != amount.scaleb(decimals).to_integral_value():
            raise LedgerError(f"amount has more than the instrument's {decimals} decimals.", field=f"{field}.amount", code="TOO_MANY_DECIMALS")
        with localcontext() as ctx:
            ctx.prec = 80
            scaled = amount.scaleb(decimals)
            multiplier = _multiplier(instrument)
            if multiplier is not None:
                scaled = scaled / multiplier
            from_amount = int(scaled.to_integral_value(rounding=ROUND_DOWN))
        if from_amount > U64_MAX:
            raise LedgerError("amount is more than a token account can hold (u64 base units).", field=f"{field}.amount", code="AMOUNT_TOO_LARGE")
    if lamports is not None:
        if lamports < 0 or lamports > U64_MAX:
            raise LedgerError("lamports must be within 0 and u64 max.", field=f"{field}.lamports", code="INVALID_AMOUNT")
        if from_amount is not None and from_amount != lamports:
            raise LedgerError(f"amount is {from_amount} base units, lamports {lamports}: they must agree (or give one).", field=field, code="VALUE_MISMATCH")
    units = lamports if lamports is not None else from_amount
    if units == 0 and not allow_zero:
        raise LedgerError("The amount must be more than 0 base units.", field=field, code="INVALID_AMOUNT")
    return units


def display(base: int, instrument) -> DisplayDecimal:
    """Base units → displayed amount (exact Decimal), following the multiplier if any."""
    decimals = int(instrument.decimals)
    with localcontext() as ctx:
        ctx.prec = 80
        value = Decimal(int(base or 0))
        multiplier = _multiplier(instrument)
        if multiplier is not None:
            value = (value * multiplier).to_integral_value(rounding=ROUND_DOWN) if decimals == 0 else value * multiplier
        value = value.scaleb(-decimals)
        if multiplier is not None:
            value = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN)
    return DisplayDecimal(value)


def token_value(base: int, instrument) -> dict:
    return {"amount": display(base, instrument), "lamports": int(base or 0)}
