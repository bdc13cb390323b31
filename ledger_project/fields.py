"""Model fields shared by the apps."""

from __future__ import annotations

from django.db import models


class JSONField(models.JSONField):
    """``models.JSONField`` that reads an empty array or object without the JSON parser.

    Most list and map columns hold ``[]`` or ``{}``, and a page of 100 accounts decodes 700
    of them; the parser's per-call overhead was a visible share of the page
    (docs/accounts.md)."""

    def from_db_value(self, value, expression, connection):
        if value == "[]":
            return []
        if value == "{}":
            return {}
        return super().from_db_value(value, expression, connection)
