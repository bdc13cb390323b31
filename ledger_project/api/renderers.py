"""JSON responses with exact decimal numbers.

DRF's encoder turns ``Decimal`` into ``float``, so a display amount such as
18446744073.709551615 (u64 max at 9 decimals) would leave as 18446744073.70955.
simplejson writes a ``Decimal`` as its exact digits (``use_decimal``); everything else is
encoded as DRF does (compact, UTF-8, NaN refused, U+2028/2029 escaped).
"""

from __future__ import annotations

from decimal import Decimal

import simplejson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder


class LedgerJSONRenderer(JSONRenderer):
    _default = staticmethod(JSONEncoder().default)

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        text = simplejson.dumps(data, use_decimal=True, default=self._default, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


class DisplayDecimal(Decimal):
    """A Decimal written in plain notation (0.000000005, not 5E-9) in responses, with the
    digits it carries (1.50 at 2 decimals); zero is written ``0`` whatever its exponent (an
    empty vault's balance at 2 decimals read ``0.00``, which clients parsing numbers as
    floats showed as ``0.0``, unlike every integer zero beside it: docs/api.md, Numbers)."""

    __slots__ = ()

    def __str__(self) -> str:
        if not self:
            return "0"
        return format(self, "f")


def display_amount(base_units: int, decimals: int) -> DisplayDecimal:
    """Base units → whole units, exactly: 18446744073709551615 at 9 decimals is
    18446744073.709551615 (a float would say 18446744073.70955)."""
    return DisplayDecimal(Decimal(int(base_units)).scaleb(-decimals))
