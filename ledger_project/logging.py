"""JSON log lines carrying the request id of the request (or task) being served.

Secrets never reach a log: API key secrets, private keys and webhook credentials are not
passed to loggers anywhere, and the formatter drops record attributes whose name looks
like a secret as a second line of defence.
"""

from __future__ import annotations

import contextvars
import json
import logging
from datetime import datetime, timezone

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("ledger_request_id", default=None)

_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "request_id"}
_SECRET_WORDS = ("secret", "password", "private", "token", "authorization", "key_value", "keyvalue")


class RequestIdFilter(logging.Filter):
    """Stamps every record with the current request id (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, requestId, extras."""

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": getattr(record, "request_id", None),
        }
        for key, value in vars(record).items():
            if key in _STANDARD_ATTRS or key.startswith("_"):
                continue
            if any(word in key.lower() for word in _SECRET_WORDS):
                continue
            payload[key] = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)
