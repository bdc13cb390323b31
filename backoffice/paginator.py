"""A paginator whose count does not scan a large table (docs/admin.md, "Lists at scale").

On PostgreSQL, a list above LEDGER_ADMIN_EXACT_COUNT_LIMIT rows is counted by estimate:
the table's ``pg_class.reltuples`` (kept by autovacuum/ANALYZE) when the list is not
filtered, else the planner's row estimate for the filtered query (EXPLAIN, no execution).
Below the limit — or when the estimate is unknown, or on SQLite — it counts exactly.
``estimated`` says which; the pagination template then writes "about".
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property


def _estimate(queryset) -> int | None:
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    if not queryset.query.where:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", [connection.ops.quote_name(queryset.model._meta.db_table)])
            row = cursor.fetchone()
        return int(row[0]) if row and row[0] is not None and row[0] >= 0 else None
    try:
        sql, params = queryset.order_by().values("pk").query.sql_with_params()
    except EmptyResultSet:  # a filter that can match nothing (e.g. pk__in=[] from a search)
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator):
    estimated = False

    @cached_property
    def count(self) -> int:
        limit = settings.LEDGER_ADMIN_EXACT_COUNT_LIMIT
        queryset = self.object_list
        if hasattr(queryset, "query") and hasattr(queryset, "model"):
            estimate = _estimate(queryset)
            if estimate is not None and estimate > limit:
                self.estimated = True
                return estimate
        return super().count
