"""How every response writes a time: aware UTC, ISO 8601 with milliseconds and a Z."""

from __future__ import annotations

from datetime import datetime


def timestamp_text(value: datetime | None) -> str | None:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else None
