"""itemQuery → ORM filter, sort, limit and skip: one implementation for every bulk endpoint.

Spec "Query objects". Each bulk endpoint declares a ``QuerySpec``: the fieldNames it
accepts, their dataType, the ORM path behind each, nullability and default sort
(docs/query.md). Anything outside the spec of the endpoint is a 400 naming the field.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Callable

from django.db.models import Case, F, Q, QuerySet, Value, When
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from ledger_project.api.envelope import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from ledger_project.api.errors import LedgerError

DATA_TYPES = ("TEXT", "NUMBER", "BOOLEAN", "TIMESTAMP", "ONCHAIN_ADDRESS_ID", "OFFCHAIN_ID")
FILTER_TYPES = ("EQUALS", "NOT_EQUALS", "IN", "RANGE", "CONTAINS", "IS_NULL", "IS_NOT_NULL")
OPERATORS = ("AND", "OR")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_SKIP = 1_000_000


@dataclass(frozen=True)
class QueryField:
    data_type: str
    path: str
    nullable: bool = False
    sortable: bool = True
    blank_is_null: bool = False  # text columns that store "absent" as ""
    #: rows where the value is shown; elsewhere the field filters and sorts as null (a
    #: value the endpoint does not disclose on those rows must not be found by a query
    #: either: e.g. a held transaction's onchainId). Applied next to each condition, so
    #: the column's own index still serves equality.
    guard: Q | None = None
    #: a field of related rows, many per record (e.g. a transaction's signers): ``path`` is
    #: the related model's column and ``related(q)`` the records having a related row that
    #: matches ``q`` (a subquery, so a record is never listed twice). A condition holds when
    #: any related row matches; NOT_EQUALS when none does. Not sortable.
    related: Callable[[Q], Q] | None = None


@dataclass(frozen=True)
class QuerySpec:
    fields: dict[str, QueryField]
    default_sort: tuple[tuple[str, str], ...] = ()
    tiebreak: str = "pk"
    default_limit: int = DEFAULT_LIMIT
    max_limit: int = MAX_LIMIT
    aliases: dict[str, str] = field(default_factory=dict)


class FilterValueSerializer(StrictSerializer):
    dataType = serializers.ChoiceField(choices=DATA_TYPES)
    filterType = serializers.ChoiceField(choices=FILTER_TYPES, required=False, default="EQUALS")
    valueString = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500)
    valueNumber = serializers.DecimalField(required=False, allow_null=True, max_digits=40, decimal_places=12)
    valueBoolean = StrictBooleanField(required=False, allow_null=True)
    valuesString = serializers.ListField(child=StrictCharField(max_length=500, allow_blank=True), required=False, allow_null=True, max_length=500)
    valueFromString = StrictCharField(required=False, allow_null=True, max_length=500)
    valueToString = StrictCharField(required=False, allow_null=True, max_length=500)
    valueFromNumber = serializers.DecimalField(required=False, allow_null=True, max_digits=40, decimal_places=12)
    valueToNumber = serializers.DecimalField(required=False, allow_null=True, max_digits=40, decimal_places=12)


class FilterSerializer(StrictSerializer):
    fieldName = StrictCharField(max_length=80)
    operator = serializers.ChoiceField(choices=OPERATORS, required=False, default="AND")
    filterValues = serializers.ListField(child=FilterValueSerializer(), min_length=1, max_length=100)


class SortSerializer(StrictSerializer):
    fieldName = StrictCharField(max_length=80)
    sortDirection = serializers.ChoiceField(choices=["ASC", "DESC"], required=False, default="ASC")


class ItemQuerySerializer(StrictSerializer):
    limit = StrictIntegerField(required=False, allow_null=True, min_value=1)
    skip = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_SKIP)
    filter = serializers.ListField(child=FilterSerializer(), required=False, allow_null=True, max_length=50)
    sort = serializers.ListField(child=SortSerializer(), required=False, allow_null=True, max_length=10)


def _bad(message: str, field_path: str, code: str = "INVALID_QUERY") -> LedgerError:
    return LedgerError(message, field=field_path, code=code)


def _convert(qf: QueryField, raw, where: str):
    """One filter value, converted to the column's Python type (400 when it is not one)."""
    if raw is None:
        raise _bad("A value is required for this filter.", where, "REQUIRED")
    kind = qf.data_type
    if kind == "NUMBER":
        try:
            return Decimal(str(raw))
        except (InvalidOperation, ValueError):
            raise _bad(f"{raw!r} is not a number.", where, "INVALID")
    if kind == "BOOLEAN":
        if isinstance(raw, bool):
            return raw
        raise _bad("valueBoolean must be true or false.", where, "INVALID")
    if kind == "TIMESTAMP":
        value = parse_datetime(str(raw)) if not isinstance(raw, datetime) else raw
        if value is None:
            raise _bad(f"{raw!r} is not an ISO 8601 timestamp.", where, "INVALID")
        return value
    if kind == "OFFCHAIN_ID":
        try:
            return uuid.UUID(str(raw))
        except ValueError:
            raise _bad(f"{raw!r} is not a UUID.", where, "INVALID")
    if kind == "ONCHAIN_ADDRESS_ID":
        from solders.pubkey import Pubkey

        try:
            Pubkey.from_string(str(raw))
        except ValueError:
            raise _bad(f"{raw!r} is not a base58 network address.", where, "INVALID_ADDRESS")
        return str(raw)
    return str(raw)


def _scalar(fv: dict, qf: QueryField, where: str):
    if qf.data_type == "NUMBER":
        return _convert(qf, fv.get("valueNumber"), f"{where}.valueNumber")
    if qf.data_type == "BOOLEAN":
        return _convert(qf, fv.get("valueBoolean"), f"{where}.valueBoolean")
    return _convert(qf, fv.get("valueString"), f"{where}.valueString")


def _condition(fv: dict, qf: QueryField, where: str) -> Q:
    if qf.related is not None:
        if (fv.get("filterType") or "EQUALS") == "NOT_EQUALS":
            return ~qf.related(_bare_condition({**fv, "filterType": "EQUALS"}, qf, where))
        return qf.related(_bare_condition(fv, qf, where))
    condition = _bare_condition(fv, qf, where)
    if qf.guard is None:
        return condition
    kind = fv.get("filterType") or "EQUALS"
    # Unguarded rows read as null: IS_NULL holds there, NOT_EQUALS too (as for a null
    # value, docs/query.md), every other test fails.
    if kind in ("IS_NULL", "NOT_EQUALS"):
        return condition | ~qf.guard
    return condition & qf.guard


def _bare_condition(fv: dict, qf: QueryField, where: str) -> Q:
    if fv["dataType"] != qf.data_type:
        raise _bad(f"This field has dataType {qf.data_type}, not {fv['dataType']}.", f"{where}.dataType", "INVALID_DATA_TYPE")
    kind = fv.get("filterType") or "EQUALS"
    path = qf.path
    if kind in ("IS_NULL", "IS_NOT_NULL"):
        if not qf.nullable:
            raise _bad(f"{kind} applies only to nullable fields.", f"{where}.filterType", "INVALID_FILTER_TYPE")
        is_null = Q(**{f"{path}__isnull": True}) | (Q(**{path: ""}) if qf.blank_is_null else Q(pk__in=[]))
        return is_null if kind == "IS_NULL" else ~is_null
    if kind == "IN" or (kind == "EQUALS" and fv.get("valuesString") and fv.get("valueString") is None and qf.data_type != "NUMBER"):
        values = fv.get("valuesString")
        if not values:
            raise _bad("IN needs valuesString.", f"{where}.valuesString", "REQUIRED")
        return Q(**{f"{path}__in": [_convert(qf, v, f"{where}.valuesString") for v in values]})
    if kind == "RANGE":
        if qf.data_type not in ("NUMBER", "TIMESTAMP", "TEXT"):
            raise _bad("RANGE applies to NUMBER, TIMESTAMP and TEXT fields.", f"{where}.filterType", "INVALID_FILTER_TYPE")
        low_key, high_key = ("valueFromNumber", "valueToNumber") if qf.data_type == "NUMBER" else ("valueFromString", "valueToString")
        low, high = fv.get(low_key), fv.get(high_key)
        if low is None and high is None:
            raise _bad(f"RANGE needs {low_key} and/or {high_key}.", f"{where}.{low_key}", "REQUIRED")
        q = Q()
        if low is not None:
            q &= Q(**{f"{path}__gte": _convert(qf, low, f"{where}.{low_key}")})
        if high is not None:
            q &= Q(**{f"{path}__lte": _convert(qf, high, f"{where}.{high_key}")})
        return q
    if kind == "CONTAINS":
        if qf.data_type != "TEXT":
            raise _bad("CONTAINS applies to TEXT fields.", f"{where}.filterType", "INVALID_FILTER_TYPE")
        return Q(**{f"{path}__icontains": _scalar(fv, qf, where)})
    value = _scalar(fv, qf, where)
    return ~Q(**{path: value}) if kind == "NOT_EQUALS" else Q(**{path: value})


def _field(spec: QuerySpec, name: str, where: str) -> QueryField:
    qf = spec.fields.get(spec.aliases.get(name, name))
    if qf is None:
        known = ", ".join(sorted(spec.fields))
        raise _bad(f"Unknown fieldName {name!r}. Known: {known}.", where, "UNKNOWN_FIELD_NAME")
    return qf


def apply_item_query(queryset: QuerySet, item_query: dict | None, spec: QuerySpec, *, prefix: str = "itemQuery", present=None) -> tuple[QuerySet, int]:
    """The page of ``queryset`` the itemQuery asks for, and the total count of matches.

    ``present`` (queryset → queryset) adds what only the page needs, such as joined display
    columns: the count runs without it, so it scans no joins it does not filter on."""
    item_query = item_query or {}
    for i, flt in enumerate(item_query.get("filter") or []):
        where = f"{prefix}.filter[{i}]"
        qf = _field(spec, flt["fieldName"], f"{where}.fieldName")
        conditions = [_condition(fv, qf, f"{where}.filterValues[{j}]") for j, fv in enumerate(flt["filterValues"])]
        combined = conditions[0]
        for extra in conditions[1:]:
            combined = (combined | extra) if flt.get("operator") == "OR" else (combined & extra)
        queryset = queryset.filter(combined)

    order: list[str] = []
    sorts = item_query.get("sort") or [{"fieldName": n, "sortDirection": d} for n, d in spec.default_sort]
    for i, srt in enumerate(sorts):
        qf = _field(spec, srt["fieldName"], f"{prefix}.sort[{i}].fieldName")
        if not qf.sortable:
            raise _bad(f"{srt['fieldName']} cannot be sorted on.", f"{prefix}.sort[{i}].fieldName", "NOT_SORTABLE")
        descending = (srt.get("sortDirection") or "ASC") == "DESC"
        if qf.guard is not None:
            shown = Case(When(qf.guard, then=F(qf.path)), default=Value(None))
            order.append(shown.desc() if descending else shown.asc())
        else:
            order.append(f"-{qf.path}" if descending else qf.path)
    order.append(spec.tiebreak)  # stable pages

    limit = item_query.get("limit") or min(spec.default_limit, spec.max_limit)
    if limit > spec.max_limit:
        raise _bad(f"limit may be at most {spec.max_limit}.", f"{prefix}.limit", "OUT_OF_RANGE")
    skip = item_query.get("skip") or 0
    count = queryset.count()
    if present is not None:
        queryset = present(queryset)
    return queryset.order_by(*order)[skip: skip + limit], count
