"""JSON log lines carrying the request id of the request (or task) being served.

Secrets never reach a log: API key secrets, private keys and webhook credentials are not
passed to loggers anywhere, and the formatter drops record attributes whose name looks
like a secret as a second line of defence.

URLs are redacted in every record (message, exception text, extras) before any handler
writes it: RPC provider URLs carry API keys in the query (``?api-key=``), the path
(``/v2/<key>``) or the user info, and webhook endpoints may too. Only the scheme, host
and port stay (docs/configuration.md, Logging).
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from datetime import datetime, timezone
from urllib.parse import urlsplit

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("ledger_request_id", default=None)

_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "request_id"}
_SECRET_WORDS = ("secret", "password", "private", "token", "authorization", "key_value", "keyvalue")


_URL = re.compile(r"\b(?:https?|wss?)://[^\s'\"<>]+", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``scheme://host[:port]`` of a URL, with ``/...`` when anything followed (path, query,
    fragment): credentials can hide in every part but the host."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<url>"
    if ":" in host:
        host = f"[{host}]"
    rest = url.split("://", 1)[1][len(parts.netloc):] if "://" in url else ""
    tail = "/..." if rest.strip("/") or parts.username or parts.password else ""
    return f"{parts.scheme}://{host}{port}{tail}"


def redact_urls(text: str) -> str:
    return _URL.sub(lambda m: redact_url(m.group(0)), text) if "://" in text else text


class RedactUrlsFilter(logging.Filter):
    """Rewrites a record with every URL redacted (message, exception text, string extras),
    whatever formatter writes it afterwards. On every handler: ours (settings.LOGGING) and
    the Celery worker's (ledger_project/celery.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_urls_redacted", False):
            return True
        message = record.getMessage()
        record.msg, record.args = redact_urls(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_urls(record.exc_text)
        for key, value in list(vars(record).items()):
            if key not in _STANDARD_ATTRS and isinstance(value, str) and "://" in value:
                setattr(record, key, redact_urls(value))
        record._urls_redacted = True
        return True


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
        if record.exc_text:
            payload["exception"] = record.exc_text
        elif record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def logging_config(*, level: str, http_client_level: str) -> dict:
    """The LOGGING setting: JSON lines carrying the request id, URLs redacted."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "ledger_project.logging.RequestIdFilter"}, "redact_urls": {"()": "ledger_project.logging.RedactUrlsFilter"}},
        "formatters": {"json": {"()": "ledger_project.logging.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_id", "redact_urls"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.request": {"level": "ERROR"},
            "django.server": {"level": "WARNING"},
            # httpx logs every request's full URL at INFO ("HTTP Request: POST https://…?api-key=…"),
            # httpcore its connection details at DEBUG: provider URLs carry API keys.
            "httpx": {"level": http_client_level},
            "httpcore": {"level": http_client_level},
            # django-axes narrates every sign-in at INFO; its failures and lockouts are WARNING
            # (and in the staff audit, with the username).
            "axes": {"level": "WARNING"},
        },
    }
