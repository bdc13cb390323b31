"""Serializers every area's answers share in shape."""

from __future__ import annotations

import sys

from rest_framework import serializers


def bulk_output(name: str, item: type[serializers.Serializer], doc: str | None = None) -> type[serializers.Serializer]:
    """The answer of a Fetch … list at one detail level: ``{count, items}``, ``items`` of
    ``item``. ``name`` is the OpenAPI component's name; ``doc`` its description."""
    attrs = {"count": serializers.IntegerField(), "items": item(many=True), "__module__": sys._getframe(1).f_globals.get("__name__", __name__)}
    if doc is not None:
        attrs["__doc__"] = doc
    return type(name, (serializers.Serializer,), attrs)
