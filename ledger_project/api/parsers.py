"""JSON request bodies, parsed once, within documented limits (docs/api.md, Limits).

Every limit answers in the spec's error shape before authentication (the request guard in
ledger_project.middleware parses the body first; the DRF parser then reuses that parse):

- a body over ``LEDGER_MAX_BODY_BYTES`` → 413 ``PAYLOAD_TOO_LARGE``;
- JSON nested deeper than ``LEDGER_MAX_JSON_DEPTH`` → 400 ``NESTING_TOO_DEEP`` (the C
  decoder would otherwise recurse until RecursionError, a 500);
- an array over ``LEDGER_MAX_JSON_ARRAY_ITEMS`` → 400 ``TOO_MANY_ITEMS``;
- malformed JSON, NaN/Infinity or a non-UTF-8 body → 400 ``MALFORMED_JSON``.

Non-integer numbers are parsed as ``Decimal``, never ``float``: an amount such as
18446744073.709551615 keeps every digit (docs/style.md, "Money and time": never a float).
"""

from __future__ import annotations

import json
from decimal import Decimal

from django.conf import settings
from rest_framework.parsers import JSONParser

from ledger_project.api.errors import LedgerError, body_too_large

#: a request attribute holding the guard's parse; absent when the guard did not parse
PARSED_ATTRIBUTE = "ledger_json"
_MISSING = object()


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _path(parts: tuple) -> str | None:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def check_shape(value) -> None:
    """Depth and array-length limits, walked without recursion."""
    max_depth, max_items = settings.LEDGER_MAX_JSON_DEPTH, settings.LEDGER_MAX_JSON_ARRAY_ITEMS
    stack = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth > max_depth:
            raise LedgerError(f"The JSON body is nested deeper than {max_depth} levels (LEDGER_MAX_JSON_DEPTH).", field=_path(path), code="NESTING_TOO_DEEP")
        if isinstance(node, dict):
            for key, child in node.items():
                if isinstance(child, (dict, list)):
                    stack.append((child, depth + 1, path + (key,)))
        elif isinstance(node, list):
            if len(node) > max_items:
                raise LedgerError(f"An array has more than {max_items} items (LEDGER_MAX_JSON_ARRAY_ITEMS).", field=_path(path), code="TOO_MANY_ITEMS")
            for index, child in enumerate(node):
                if isinstance(child, (dict, list)):
                    stack.append((child, depth + 1, path + (index,)))


def parse_json_body(raw: bytes):
    """The JSON value of a request body, or a LedgerError (413/400) naming the limit."""
    if len(raw) > settings.LEDGER_MAX_BODY_BYTES:
        raise body_too_large()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LedgerError("The body is not UTF-8 encoded JSON.", code="MALFORMED_JSON") from None
    try:
        value = json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant)
    except RecursionError:
        raise LedgerError(f"The JSON body is nested deeper than {settings.LEDGER_MAX_JSON_DEPTH} levels (LEDGER_MAX_JSON_DEPTH).", code="NESTING_TOO_DEEP") from None
    except ValueError as exc:
        raise LedgerError(f"Malformed JSON: {exc}.", code="MALFORMED_JSON") from None
    check_shape(value)
    return value


class LedgerJSONParser(JSONParser):
    """DRF's JSON parser with the limits above; reuses the request guard's parse."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        parsed = getattr(getattr(request, "_request", None), PARSED_ATTRIBUTE, _MISSING)
        if parsed is not _MISSING:
            return parsed
        return parse_json_body(stream.read(settings.LEDGER_MAX_BODY_BYTES + 1) if stream is not None else b"")
