"""One field list per response: a fast renderer (a function building an answer's dict
directly, for speed; accounts/render.py says why) declares the serializer that documents the
same answer in the OpenAPI, and under the tests every dict it returns is checked against
that serializer's fields, level by level (tests/test_response_shapes.py lists the renderers
of every area). The serializers are the one field list; the renderers follow them.
"""

from __future__ import annotations

import functools
import importlib
from typing import Callable

from rest_framework import serializers

#: "module.function" → "module.Serializer" of every declared renderer
DECLARED: dict[str, str] = {}
_checking = False
_trees: dict[str, dict] = {}


def check_shapes(on: bool) -> None:
    """Turn the check on (the test session does) or off."""
    global _checking
    _checking = on


def renders(serializer: str) -> Callable:
    """Declare that the decorated function returns the answer ``serializer`` documents
    (a dotted path, resolved when first checked)."""

    def declare(fn: Callable) -> Callable:
        DECLARED[f"{fn.__module__}.{fn.__qualname__}"] = serializer

        @functools.wraps(fn)
        def rendered(*args, **kwargs):
            out = fn(*args, **kwargs)
            if _checking:
                assert_shape(out, serializer, where=fn.__qualname__)
            return out

        return rendered

    return declare


def _tree(field):
    """A serializer's fields as nested names: ("object", {name: tree}, required names) for a
    nested serializer, ("list", tree) for a list of them, ("any", [trees]) for one of several
    (a PolymorphicProxySerializer), None for a leaf or a free-form JSON value."""
    from drf_spectacular.utils import PolymorphicProxySerializer

    if isinstance(field, PolymorphicProxySerializer):
        choices = field.serializers.values() if isinstance(field.serializers, dict) else field.serializers
        return ("any", [_tree(choice() if isinstance(choice, type) else choice) for choice in choices])
    if isinstance(field, serializers.ListSerializer):
        return ("list", _tree(field.child))
    if isinstance(field, serializers.ListField) and isinstance(field.child, serializers.Serializer):
        return ("list", _tree(field.child))
    if isinstance(field, serializers.Serializer):
        fields = field.fields
        return ("object", {name: _tree(child) for name, child in fields.items()}, frozenset(name for name, child in fields.items() if child.required))
    return None


def field_tree(serializer: str):
    if serializer not in _trees:
        module, _, name = serializer.rpartition(".")
        _trees[serializer] = _tree(getattr(importlib.import_module(module), name)())
    return _trees[serializer]


class ShapeMismatch(AssertionError):
    pass


def _compare(value, tree, where: str) -> None:
    if tree is None or value is None:
        return
    kind = tree[0]
    if kind == "list":
        if isinstance(value, list):
            for index, item in enumerate(value):
                _compare(item, tree[1], f"{where}[{index}]")
        return
    if kind == "any":
        failures = []
        for choice in tree[1]:
            try:
                _compare(value, choice, where)
                return
            except ShapeMismatch as exc:
                failures.append(str(exc))
        raise ShapeMismatch(f"{where}: none of the documented shapes: " + "; ".join(failures))
    _, fields, required = tree
    if not isinstance(value, dict):
        raise ShapeMismatch(f"{where}: the serializer documents an object, the renderer gave {type(value).__name__}")
    extra, missing = set(value) - set(fields), set(required) - set(value)
    if extra or missing:
        raise ShapeMismatch(f"{where}: keys the serializer does not document {sorted(extra)}, documented keys not rendered {sorted(missing)}")
    for name, item in value.items():
        _compare(item, fields[name], f"{where}.{name}")


def assert_shape(value, serializer: str, *, where: str = "answer") -> None:
    """``value`` has only keys ``serializer`` documents, and every one it requires, at every
    nested level."""
    _compare(value, field_tree(serializer), where)
