"""x-request-id idempotency for mutating operations.

``@idempotent`` wraps a view method. With an ``x-request-id`` (a UUID) it runs the
operation inside one database transaction that also inserts the IdempotencyRecord for
(API key, request id) and stores the response in it:

- the unique constraint makes a concurrent request with the same id wait for the first
  one's transaction, then replay its stored response: the operation runs once;
- a request that crashes (or answers 5xx) rolls back with its record, so a retry runs
  afresh and nothing half-done is ever replayed;
- 2xx and 4xx responses are stored and replayed with the same status and body; the same
  id with a different method, path or body is a 409.

Records are kept LEDGER_IDEMPOTENCY_RETENTION_HOURS (default 48) and purged by the
``ledger.tenancy.purge_idempotency_records`` periodic task.
"""

from __future__ import annotations

import functools
import hashlib
import json

from django.db import IntegrityError, transaction
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from ledger_project.api.errors import ConflictError, LedgerError

REPLAY_HEADER = "x-idempotent-replay"


def request_fingerprint(request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    raw = f"{request.method}\n{request.path}\n{request.META.get('QUERY_STRING', '')}\n{body}"
    return hashlib.sha256(raw.encode()).hexdigest()


def client_request_id(request):
    """The request's x-request-id as a UUID, None when absent; 400 when malformed."""
    raw = getattr(request, "client_request_id_raw", None)
    parsed = getattr(request, "client_request_id", None)
    if raw and parsed is None:
        raise LedgerError("x-request-id must be a UUID.", field="x-request-id", code="INVALID_REQUEST_ID")
    return parsed


def _replay(record, fingerprint: str) -> Response:
    if record.body_hash != fingerprint:
        raise ConflictError(
            "This x-request-id was already used for a different request; use a new id for a new request.",
            field="x-request-id",
            code="REQUEST_ID_REUSED",
        )
    response = Response(record.response_body, status=record.status_code)
    response[REPLAY_HEADER] = "true"
    return response


def _run_once(view, request, request_id, view_method, args, kwargs) -> Response:
    from tenancy.models import IdempotencyRecord

    if request_id is None:
        with transaction.atomic():
            return view_method(view, request, *args, **kwargs)

    fingerprint = request_fingerprint(request)
    with transaction.atomic():
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    api_key=request.user, request_id=request_id, method=request.method, path=request.path[:300], body_hash=fingerprint
                )
        except IntegrityError:
            # The first request committed while we waited on the unique index.
            record = IdempotencyRecord.objects.get(api_key=request.user, request_id=request_id)
            return _replay(record, fingerprint)
        try:
            with transaction.atomic():
                response = view_method(view, request, *args, **kwargs)
        except (LedgerError, APIException) as exc:
            response = view.handle_exception(exc)
            if response.status_code >= 500:
                raise
        record.status_code = response.status_code
        record.response_body = response.data
        record.save(update_fields=["status_code", "response_body"])
        return response


def idempotent(view_method):
    @functools.wraps(view_method)
    def wrapper(self, request, *args, **kwargs):
        request_id = client_request_id(request)
        response = _run_once(self, request, request_id, view_method, args, kwargs)
        # Work that must follow the commit (e.g. ?wait=confirmed: the worker only sees the
        # transaction once it is committed). The stored replay keeps the pre-wait body.
        after_commit = getattr(response, "after_commit", None)
        if after_commit is not None:
            after_commit(response)
        return response

    wrapper.idempotent = True
    return wrapper
