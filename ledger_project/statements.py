"""Querysets of the hot request path, compiled to SQL once per process (docs/performance.md).

Django compiles a queryset to SQL every time it is evaluated. For the lookups a
transfer makes (a position with its token account, owner and instrument: 160 columns)
that was 3-5 ms of CPU each on the benchmark machine, most of what a request cost.
``Statement.fetch(queryset)`` compiles only the queryset's WHERE clause — which gives the
parameters and tells one shape from another — and reuses, per shape and database alias,
what Django produced the first time: the SQL, the column converters and the plan that
turns a row into model instances (the queryset's model and its select_related ones, as
Django's ModelIterable does). Rows come back as the same instances ``list(queryset)``
would give.

One ``Statement`` per call site, for querysets of a fixed shape: filters, select_related,
order_by, a slice, select_for_update. A queryset with annotations, extra(), values(),
only()/defer(), prefetch_related or a combinator is evaluated the ordinary way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models.query import ModelIterable, get_related_populators
from django.db.transaction import TransactionManagementError

#: Shapes kept per statement (``pk__in`` lists of different lengths are different SQL).
MAX_SHAPES = 256


@dataclass(frozen=True)
class _Plan:
    sql: str
    converters: tuple  # ((position, (converter, ...), expression), ...)
    model: type
    start: int
    end: int
    init_list: tuple[str, ...]
    related_populators: tuple
    for_update: bool


_UNCOMPILABLE = object()


class Statement:
    def __init__(self, name: str):
        self.name = name
        self._plans: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Statement {self.name}: {len(self._plans)} shape(s)>"

    def fetch(self, queryset) -> list:
        """``list(queryset)``, without compiling what was compiled before."""
        query = queryset.query
        if not _compilable(queryset):
            return list(queryset)
        connection = connections[queryset.db]
        compiler = query.get_compiler(connection=connection)
        try:
            where, params = compiler.compile(query.where)
        except EmptyResultSet:
            return []
        except FullResultSet:
            where, params = "", []
        key = (connection.alias, where, _shape(query))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(queryset, params) or _UNCOMPILABLE
            with self._lock:
                if len(self._plans) >= MAX_SHAPES:
                    self._plans.clear()
                self._plans[key] = plan
        if plan is _UNCOMPILABLE:
            return list(queryset)
        if plan.for_update and connection.features.has_select_for_update and connection.get_autocommit():
            # What Django's compiler says on every evaluation.
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            rows = cursor.fetchall()
        return plan_objects(plan, rows, connection)

    def _plan(self, queryset, params) -> _Plan | None:
        query = queryset.query
        connection = connections[queryset.db]
        compiler = query.get_compiler(connection=connection)
        sql, full_params = compiler.as_sql()
        if tuple(full_params) != tuple(params) or compiler.annotation_col_map or compiler.klass_info is None:
            return None  # parameters outside the WHERE clause: not this helper's shape
        select, klass_info = compiler.select, compiler.klass_info
        converters = compiler.get_converters([expression for expression, _, _ in select])
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        return _Plan(
            sql=sql,
            converters=tuple((position, tuple(functions), expression) for position, (functions, expression) in converters.items()),
            model=klass_info["model"], start=start, end=end,
            init_list=tuple(column[0].target.attname for column in select[start:end]),
            related_populators=tuple(get_related_populators(klass_info, select, queryset.db)),
            for_update=bool(query.select_for_update),
        )


def plan_objects(plan: _Plan, rows, connection) -> list:
    alias = connection.alias
    objects = []
    for row in rows:
        if plan.converters:
            row = list(row)
            for position, functions, expression in plan.converters:
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
        obj = plan.model.from_db(alias, plan.init_list, row[plan.start:plan.end])
        for populator in plan.related_populators:
            populator.populate(row, obj)
        objects.append(obj)
    return objects


def _compilable(queryset) -> bool:
    query = queryset.query
    return (
        queryset._iterable_class is ModelIterable
        and not queryset._prefetch_related_lookups
        and not queryset._known_related_objects
        and not query.annotations
        and not query.extra
        and not query.extra_tables
        and not query.combinator
        and query.group_by is None
        and query.deferred_loading == (frozenset(), True)
    )


def _shape(query) -> tuple:
    """Everything but the WHERE clause that decides the SQL of a ModelIterable query."""
    select_related = query.select_related
    return (
        query.model._meta.label,
        select_related if select_related is True or select_related is False else repr(select_related),
        tuple(str(o) for o in query.order_by), query.default_ordering, query.standard_ordering, tuple(query.extra_order_by),
        query.low_mark, query.high_mark, query.distinct, tuple(query.distinct_fields),
        query.select_for_update, query.select_for_update_nowait, query.select_for_update_skip_locked,
        tuple(query.select_for_update_of), query.select_for_no_key_update,
        tuple((alias, getattr(join, "join_type", None), getattr(join, "table_name", None)) for alias, join in query.alias_map.items()),
    )
