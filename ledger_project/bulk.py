"""Set-based writes of the confirmation path, cheaper than the ORM's (docs/performance.md).

Django's ``bulk_update`` builds a ``CASE WHEN pk = … THEN …`` expression per row and field
and resolves each through the expression machinery: for the 50–100 rows a chunk of
confirmations writes, that was ~40 % of a pump holder's CPU (bench/profile_pump.py).
``bulk_set`` writes the same values with one statement per 500 rows, the rows given as
a VALUES list joined on the primary key:

    UPDATE table SET col1 = v.column2, …
    FROM (VALUES (%s, %s, …), …) AS v WHERE table.pk = v.column1

(PostgreSQL and SQLite ≥ 3.33 both run it; on PostgreSQL each value is cast to its
column's type, since a VALUES list of parameters has no declared types). Values are
prepared by each field as ``save()`` would (``get_db_prep_save``). The rows must already
be locked by the caller when the order of writes matters (it is not the pk order).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from django.db import connections, router

BATCH = 500


def bulk_set(model, objs: Iterable, fields: Sequence[str]) -> int:
    """Write ``fields`` of ``objs`` (instances of ``model`` with a primary key) to their rows,
    as ``model.objects.bulk_update(objs, fields)`` would. Returns the rows written."""
    objs = list(objs)
    if not objs:
        return 0
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    postgres = connection.vendor == "postgresql"

    def value(index: int, field) -> str:
        # VALUES columns are column1, column2, … on both databases
        return f"CAST(v.column{index + 1} AS {field.db_type(connection)})" if postgres else f"v.column{index + 1}"

    table = quote(meta.db_table)
    assignments = ", ".join(f"{quote(field.column)} = {value(i + 1, field)}" for i, field in enumerate(columns))
    row = "(" + ", ".join(["%s"] * (len(columns) + 1)) + ")"
    written = 0
    with connection.cursor() as cursor:
        for start in range(0, len(objs), BATCH):
            batch = objs[start:start + BATCH]
            params: list = []
            for obj in batch:
                params.append(meta.pk.get_db_prep_save(obj.pk, connection))
                params.extend(field.get_db_prep_save(getattr(obj, field.attname), connection) for field in columns)
            cursor.execute(f"UPDATE {table} SET {assignments} FROM (VALUES {', '.join([row] * len(batch))}) AS v "
                           f"WHERE {table}.{quote(meta.pk.column)} = {value(0, meta.pk)}", params)
            written += cursor.rowcount
    return written
