"""Request id, and the checks every API request passes before authentication.

RequestIdMiddleware: every request gets an id, taken from ``x-request-id`` when it is a
UUID. The id is echoed in the ``x-request-id`` response header, carried by every log line
of the request (ledger_project.logging) and returned as ``requestId`` in error bodies.

ApiRequestGuardMiddleware: under ``/api/``, before authentication and before any view
(docs/api.md, Limits and x-request-id), so a request without a key gets the same answer:

- a body sent with ``Transfer-Encoding`` (chunked) instead of a Content-Length → 411
  ``LENGTH_REQUIRED``: Django reads only Content-Length bytes, so such a body would
  otherwise be read as empty (an ``auth/token`` call judged on no credentials);
- a body over ``LEDGER_MAX_BODY_BYTES`` → 413 ``PAYLOAD_TOO_LARGE`` (from Content-Length,
  before reading it);
- a JSON body is parsed once with the limits of ledger_project.api.parsers (depth, array
  length; 400) and must be a JSON object (400 ``INVALID_TYPE``); the DRF parser reuses
  this parse;
- ``x-request-id``, when present, must be a UUID on every request, fetch or mutation
  (400 ``INVALID_REQUEST_ID``): one rule, so a client learns about a broken id on its
  first call, not on its first write;
- ``?wait=`` must be one of submitted, confirmed, finalized (400 ``INVALID_ENUM``) on
  every operation, even one that ends up building no transaction.
"""

from __future__ import annotations

import uuid

from django.conf import settings

from ledger_project.api.errors import LedgerError, LengthRequiredError, body_too_large, ledger_error_response
from ledger_project.logging import request_id_var

API_PREFIX = "/api/"
#: enum query parameters and their values (svmCluster is checked against the configured
#: clusters by ledger_project.api.clusters)
QUERY_ENUMS = {"wait": ("submitted", "confirmed", "finalized")}


def parse_request_id(raw: str | None) -> uuid.UUID | None:
    """The header's UUID in its canonical 8-4-4-4-12 form (what the OpenAPI states);
    ``uuid.UUID`` would also take braces, ``urn:uuid:`` and bare hex."""
    from ledger_project.api.envelope import canonical_uuid

    return canonical_uuid(raw.strip()) if raw is not None else None


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


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def guard_api_request(request) -> None:
    """Raise the LedgerError the request deserves before any view runs, or None."""
    from ledger_project.api.parsers import PARSED_ATTRIBUTE, parse_json_body

    if request.META.get("HTTP_TRANSFER_ENCODING"):
        raise LengthRequiredError()
    if _content_length(request) > settings.LEDGER_MAX_BODY_BYTES:
        raise body_too_large()
    if request.client_request_id_raw is not None and request.client_request_id is None:
        raise LedgerError("x-request-id must be a UUID.", field="x-request-id", code="INVALID_REQUEST_ID")
    for name, allowed in QUERY_ENUMS.items():
        for value in request.GET.getlist(name):
            if value and value not in allowed:  # empty = absent, as wait_level reads it
                raise LedgerError(f"{name} must be one of {', '.join(allowed)}.", field=name, code="INVALID_ENUM")
    if request.content_type == "application/json" and _content_length(request):
        value = parse_json_body(request.body)
        if not isinstance(value, dict):
            raise LedgerError("The request body must be a JSON object.", code="INVALID_TYPE")
        setattr(request, PARSED_ATTRIBUTE, value)


class ApiRequestGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            try:
                guard_api_request(request)
            except LedgerError as exc:
                return ledger_error_response(request, exc)
        return self.get_response(request)
