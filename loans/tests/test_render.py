"""How a loan's figures are written (docs/loans.md, "Loan response"), without a chain."""

from __future__ import annotations

from decimal import Decimal

from ledger_project.api.renderers import LedgerJSONRenderer
from loans.render import PER_SECOND_DIGITS, per_second
from programs.lending.client import INTEREST_DENOMINATOR


def _json(value) -> str:
    return LedgerJSONRenderer().render({"v": value}).decode()[5:-1]


def test_interest_per_second_is_twelve_significant_digits_in_plain_notation():
    """It was written with ~34 significant digits (the exact fraction principal × APY over a
    year of seconds): 0.000003170979198376458650431253170979198."""
    exact = Decimal(100_000 * 1_000) / Decimal(INTEREST_DENOMINATOR)  # 1,000.00 USD at 10 %, in cents a second
    shown = per_second(exact, 2)
    assert _json(shown) == "0.00000317097919838"
    assert len(shown.as_tuple().digits) == PER_SECOND_DIGITS
    assert abs(shown * 365 * 86400 - 100) < Decimal("1e-9")  # a year of it is still 100 USD
    assert _json(per_second(Decimal(0), 6)) == "0"
    assert _json(per_second(Decimal(31_536_000 * 5), 0)) == "157680000"  # whole numbers stay whole, no exponent
