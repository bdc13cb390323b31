"""What the engine may need to know about the request it works for, without importing the
API layer: the acting API key (set by the API's view base for the request's duration;
None in workers, the admin and management commands)."""

from __future__ import annotations

import contextvars

acting_api_key_var: contextvars.ContextVar[object | None] = contextvars.ContextVar("ledger_acting_api_key", default=None)
