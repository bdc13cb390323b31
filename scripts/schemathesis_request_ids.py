"""x-request-id in the project's schemathesis run (docs/api.md, "schemathesis"): every call
gets a fresh one (schemathesis's coverage phase reuses one, so most cases would be answered
409 REQUEST_ID_REUSED), and a tally of the cases that reached an operation's logic is written
for scripts/schemathesis_run.py. Registered when scripts/schemathesis_hooks.py imports it."""

from __future__ import annotations

import atexit
import json
import os
import uuid
from pathlib import Path

import schemathesis

from scripts import schemathesis_checks as checks
from scripts.schemathesis_hooks import _is_uuid, _seed


# --- x-request-id: a fresh one per call, and the tally of what the calls reached ------------

REQUEST_ID = "x-request-id"


def fresh_request_id(headers: dict | None) -> dict:
    """``headers`` with a new x-request-id, unless the one there is deliberately broken (not
    a UUID: a negative case, answered 400 INVALID_REQUEST_ID before anything else)."""
    headers = dict(headers or {})
    given = headers.get(REQUEST_ID)
    if given is None or _is_uuid(given):
        headers[REQUEST_ID] = str(uuid.uuid4())
    return headers


@schemathesis.hook
def before_call(context, case, kwargs):
    if _seed() is None:
        return
    case.headers = fresh_request_id(case.headers)


class Tally:
    """Cases answered, and those that did not reach an operation's logic because of their
    x-request-id: 409 REQUEST_ID_REUSED, or a replayed stored answer."""

    def __init__(self):
        self.cases = self.reused = self.replayed = 0

    def add(self, status: int, codes: list[str] | None, replayed: bool) -> None:
        self.cases += 1
        if status == 409 and codes and "REQUEST_ID_REUSED" in codes:
            self.reused += 1
        elif replayed:
            self.replayed += 1

    @property
    def reached(self) -> int:
        return self.cases - self.reused - self.replayed

    def as_dict(self) -> dict:
        return {"cases": self.cases, "reached": self.reached, "requestIdReused": self.reused, "replayed": self.replayed}


_TALLY = Tally()


def _write_tally() -> None:
    path = os.environ.get("SCHEMATHESIS_TALLY_FILE")
    if path:
        Path(path).write_text(json.dumps(_TALLY.as_dict()))


@schemathesis.hook
def after_call(context, case, response):
    if _seed() is None:
        return
    replayed = "true" in [value.lower() for value in response.headers.get("x-idempotent-replay") or []]  # lower-case names, list values
    _TALLY.add(response.status_code, checks._error_codes(response), replayed)
    if _TALLY.cases % 100 == 1:
        _write_tally()


atexit.register(_write_tally)
