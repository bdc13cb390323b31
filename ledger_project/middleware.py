"""Request id: every request gets one, taken from ``x-request-id`` when it is a UUID.

The id is echoed in the ``x-request-id`` response header, carried by every log line of
the request (ledger_project.logging) and returned as ``requestId`` in error bodies. A
malformed ``x-request-id`` is refused later, in the API layer, with a 400 in the spec's
error shape (ledger_project.api.idempotency); here it is only kept aside.
"""

from __future__ import annotations

import uuid

from ledger_project.logging import request_id_var


def parse_request_id(raw: str | None) -> uuid.UUID | None:
    if not raw:
        return None
    try:
        return uuid.UUID(raw.strip())
    except ValueError:
        return None


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = request.headers.get("x-request-id")
        parsed = parse_request_id(raw)
        request.client_request_id = parsed  # None when absent or malformed
        request.client_request_id_raw = raw
        request.request_id = str(parsed or uuid.uuid4())
        token = request_id_var.set(request.request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["x-request-id"] = request.request_id
        return response
