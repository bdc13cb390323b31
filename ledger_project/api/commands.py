"""The spec's JSON stops at the door: typed commands in, Python field paths out.

A service takes a *command*: a frozen dataclass with Python names (``marketdata/commands.py``),
built once from the body its serializer validated (``command``). A service that refuses a
field names it by the command's Python path (``partner_oracle_details.job_definition``);
the door maps that path to the request's once (``spec_path``: ``itemData.partnerOracleDetails
.jobDefinition``), reading the names from the operation's own serializer (tenancy/endpoints.py
does it for every operation). So services never spell the spec's camelCase keys, and a field
renamed in the spec is renamed in its serializer and command only (docs/architecture.md,
"The spec's JSON stops at the door").

A command field's request name is its name in camelCase unless its metadata says otherwise
(``field(metadata={"spec": "alId"})``); ``UNSET`` is the default of a field whose absence
means something else than null (patch semantics: "left out: unchanged").
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from functools import cache
from typing import Any

from rest_framework import serializers


class _Unset:
    """The value of a command field the request left out (``UNSET``)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def camel(name: str) -> str:
    """``partner_oracle_details`` → ``partnerOracleDetails``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def spec_name(spec_field: dataclasses.Field) -> str:
    return spec_field.metadata.get("spec") or camel(spec_field.name)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _dataclass_of(hint: Any) -> tuple[type | None, bool]:
    """The dataclass a field's type names (directly, in an Optional, or as a list's item) and
    whether it is a list of them."""
    if dataclasses.is_dataclass(hint):
        return hint, False
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (list, tuple) and args and dataclasses.is_dataclass(args[0]):
        return args[0], True
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            found, many = _dataclass_of(arg)
            if found is not None:
                return found, many
    return None, False


def command(cls: type, data: dict | None) -> Any:
    """``cls`` (a dataclass) from ``data``, the spec's shape as a serializer validated it.
    A key ``cls`` has no field for is a programming error (TypeError), not a dropped value."""
    if data is None:
        return None
    fields = {spec_name(f): f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for {', '.join(unknown)}")
    hints = _hints(cls)
    values = {}
    for key, value in data.items():
        f = fields[key]
        inner, many = _dataclass_of(hints[f.name])
        if inner is not None and value is not None:
            value = [command(inner, item) for item in value] if many else command(inner, value)
        values[f.name] = value
    return cls(**values)


# --- field paths ---------------------------------------------------------------------------------

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")
ITEM = "itemData"


def _child(field_: serializers.Field) -> serializers.Field | None:
    """The serializer below a field: itself when it is one, a list's item."""
    if isinstance(field_, serializers.ListSerializer):
        return field_.child
    if isinstance(field_, serializers.ListField):
        return field_.child
    return field_ if isinstance(field_, serializers.Serializer) else None


def _named(serializer: serializers.Field | None, segment: str) -> str | None:
    """The request's name of ``segment`` (a Python or request name) among ``serializer``'s fields."""
    if not isinstance(serializer, serializers.Serializer):
        return None
    names = serializer.fields
    if segment in names:
        return segment
    spelled = camel(segment)
    return spelled if spelled in names else None


def _walk(serializer: serializers.Field, segments: list[tuple[str, str]]) -> list[str] | None:
    """The request's names of ``segments`` under ``serializer``: None unless the first is one
    of its fields; the names after the last field the serializer knows are kept as given
    (a path inside a value, such as a job definition's ``tasks[1].httpTask``)."""
    out: list[str] = []
    here: serializers.Field | None = serializer
    for position, (name, index) in enumerate(segments):
        found = _named(here, name)
        if found is None:
            if position == 0:
                return None
            out.extend(n + i for n, i in segments[position:])
            return out
        out.append(found + index)
        here = _child(here.fields[found])
    return out


def spec_path(input_serializer: type | serializers.Serializer, path: str | None) -> str | None:
    """``path`` as the request names it. A Python path of the operation's command (relative
    to ``itemData``, ``financial_instrument``) or of the whole body (``svm_transaction_config
    .fee_payer``) becomes the request's (``itemData.financialInstrument``); a request path
    maps to itself, and a path the serializer does not know is returned as it is."""
    if not path:
        return path
    segments = _SEGMENT.findall(path)
    if "".join(n + i for n, i in segments) != path.replace(".", ""):
        return path  # not a field path
    root = input_serializer() if isinstance(input_serializer, type) else input_serializer
    names = _walk(root, segments)
    if names is None and ITEM in root.fields:
        below = _walk(_child(root.fields[ITEM]), segments) if _child(root.fields[ITEM]) is not None else None
        names = [ITEM, *below] if below is not None else None
    return ".".join(names) if names is not None else path
