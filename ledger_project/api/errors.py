"""Domain errors and the one exception handler that renders the spec's error shape.

Every 4xx/5xx body is ``{"errors": [{"code", "message", "field"}], "requestId"}``
(docs/errors.md lists the codes). Views never build error bodies: they raise.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger("ledger.api")


class LedgerError(Exception):
    """Base of every error the API reports on purpose."""

    status_code = 400
    code = "BAD_REQUEST"
    default_message = "The request is invalid."

    def __init__(self, message: str | None = None, *, field: str | None = None, code: str | None = None, extra: dict | None = None):
        self.message = message or self.default_message
        self.field = field
        if code:
            self.code = code
        self.extra = extra or {}
        super().__init__(self.message)

    def as_errors(self) -> list[dict[str, Any]]:
        return [{"code": self.code, "message": self.message, "field": self.field}]

    @property
    def not_now(self) -> bool:
        """An answer that says "not now" rather than "no": the service's trouble (5xx) or a
        rate or quota (429). Never stored for an x-request-id (tenancy/idempotency.py), and
        a batch meeting one fails as a whole rather than rejecting an item with it."""
        return not_now(self.status_code)


def not_now(status_code: int) -> bool:
    """``LedgerError.not_now`` for an HTTP status."""
    return status_code >= 500 or status_code == 429


# Errors of the packages below the API (the chain client's): each raises its own, and the
# package above both that owns the door registers, once at start-up, how one becomes the
# API's (tenancy/chain_errors.py). This floor imports none of them.
_translations: list[tuple[type, Callable[[Exception], LedgerError]]] = []


def register_translation(kind: type, translate: Callable[[Exception], LedgerError]) -> None:
    """Answer errors of ``kind`` as ``translate`` makes them LedgerErrors."""
    if all(known is not kind for known, _ in _translations):
        _translations.append((kind, translate))


def api_error(exc: Exception) -> LedgerError | None:
    """``exc`` as the API answers it: itself when a LedgerError, its registered
    translation, else None (not an error raised on purpose)."""
    if isinstance(exc, LedgerError):
        return exc
    for kind, translate in _translations:
        if isinstance(exc, kind):
            return translate(exc)
    return None


class ValidationFailed(LedgerError):
    """Several field errors at once (a 400 listing each)."""

    code = "VALIDATION_ERROR"

    def __init__(self, errors: list[dict[str, Any]]):
        self.errors = errors
        super().__init__(errors[0]["message"] if errors else "Invalid request.", field=errors[0].get("field") if errors else None)

    def as_errors(self) -> list[dict[str, Any]]:
        return self.errors


class NotAuthenticatedError(LedgerError):
    status_code = 401
    code = "UNAUTHENTICATED"
    default_message = "A valid bearer token is required: Authorization: Bearer <API key secret or access token>."


class ForbiddenError(LedgerError):
    status_code = 403
    code = "FORBIDDEN"
    default_message = "The API key lacks a role this operation requires."


class NotFoundError(LedgerError):
    status_code = 404
    code = "NOT_FOUND"
    default_message = "No such record."


class ConflictError(LedgerError):
    status_code = 409
    code = "CONFLICT"
    default_message = "The record conflicts with an existing one."


class PayloadTooLargeError(LedgerError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"
    default_message = "The request body is larger than the service accepts."


class LengthRequiredError(LedgerError):
    status_code = 411
    code = "LENGTH_REQUIRED"
    default_message = (
        "Send the request body with a Content-Length header; a chunked (Transfer-Encoding) body is not accepted."
    )


class RateLimitedError(LedgerError):
    status_code = 429
    code = "RATE_LIMITED"
    default_message = "Too many requests for this API key."

    def __init__(self, retry_after: int, message: str | None = None):
        self.retry_after = retry_after
        super().__init__(message or f"Too many requests for this API key; retry after {retry_after} s.")


class ServiceUnavailableError(LedgerError):
    status_code = 503
    code = "SERVICE_UNAVAILABLE"
    default_message = "A backing service is unavailable; retry later."


# DRF's own error codes → ours (docs/errors.md). Our own codes (upper case, raised through
# ValidationError(code=...)) pass through; any other DRF code is INVALID, so no code leaves
# that docs/errors.md does not list (tests/test_api_errors.py).
_DRF_CODES = {
    "required": "REQUIRED",
    "null": "REQUIRED",
    "blank": "REQUIRED",
    "invalid": "INVALID",
    "invalid_choice": "INVALID_ENUM",
    "invalid_address": "INVALID_ADDRESS",
    "not_a_list": "INVALID_TYPE",
    "not_a_dict": "INVALID_TYPE",
    "max_value": "OUT_OF_RANGE",
    "min_value": "OUT_OF_RANGE",
    "max_length": "TOO_LONG",
    "min_length": "TOO_SHORT",
    "empty": "TOO_SHORT",
    "max_string_length": "TOO_LONG",
    "max_digits": "OUT_OF_RANGE",
    "max_whole_digits": "OUT_OF_RANGE",
    "max_decimal_places": "INVALID",
    "null_characters_not_allowed": "INVALID",
    "surrogate_characters_not_allowed": "INVALID",
    "date": "INVALID",
    "make_aware": "INVALID",
    "overflow": "INVALID",
    "unknown_field": "UNKNOWN_FIELD",
    "too_many_keys": "TOO_MANY_KEYS",
    "too_large": "TOO_LARGE",
    "url_not_allowed": "URL_NOT_ALLOWED",
    "parse_error": "MALFORMED_JSON",
    "unsupported_media_type": "UNSUPPORTED_MEDIA_TYPE",
    "method_not_allowed": "METHOD_NOT_ALLOWED",
    "not_acceptable": "NOT_ACCEPTABLE",
    "not_authenticated": "UNAUTHENTICATED",
    "authentication_failed": "UNAUTHENTICATED",
    "permission_denied": "FORBIDDEN",
    "not_found": "NOT_FOUND",
    "throttled": "RATE_LIMITED",
}


def _code(drf_code: str | None) -> str:
    if not drf_code:
        return "INVALID"
    code = str(drf_code)
    if code in _DRF_CODES:
        return _DRF_CODES[code]
    return code if code.isupper() else "INVALID"


def flatten_validation(detail: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Turn DRF's nested error detail into a flat list with dotted field paths.

    ``{"itemData": {"items": [{}, {"value": [err]}]}}`` → field ``itemData.items[1].value``.
    """
    out: list[dict[str, Any]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                out.extend(flatten_validation(value, prefix))
            elif isinstance(key, int):  # ListField reports child errors by index
                out.extend(flatten_validation(value, f"{prefix}[{key}]"))
            else:
                out.extend(flatten_validation(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(detail, list):
        if all(isinstance(item, drf_exceptions.ErrorDetail) or isinstance(item, str) for item in detail):
            for item in detail:
                out.append({"code": _code(getattr(item, "code", None)), "message": str(item), "field": prefix or None})
        else:
            for index, item in enumerate(detail):
                if item:
                    out.extend(flatten_validation(item, f"{prefix}[{index}]"))
    else:
        out.append({"code": _code(getattr(detail, "code", None)), "message": str(detail), "field": prefix or None})
    return out


#: at most this many errors are listed in one body; the rest are counted in one more
#: error, TOO_MANY_ERRORS (docs/errors.md). 60,000 unknown keys would otherwise be a
#: multi-megabyte 400, stored too when the request is idempotent.
MAX_LISTED_ERRORS = 20


def capped_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first MAX_LISTED_ERRORS errors, plus one summary error when there are more."""
    if len(errors) <= MAX_LISTED_ERRORS:
        return errors
    more = len(errors) - MAX_LISTED_ERRORS
    summary = {"code": "TOO_MANY_ERRORS", "message": f"{more} more errors not listed (at most {MAX_LISTED_ERRORS} are listed).", "field": None}
    return [*errors[:MAX_LISTED_ERRORS], summary]


def error_body(errors: list[dict[str, Any]], request_id: str | None) -> dict[str, Any]:
    """The one error shape; every error response (DRF handler, middleware, Django
    handlers) is built here, so the cap applies to every path."""
    return {"errors": capped_errors(errors), "requestId": request_id}


def _request_id(context: dict) -> str | None:
    request = context.get("request")
    return getattr(request, "request_id", None) if request is not None else None


def exception_handler(exc: Exception, context: dict) -> Response:
    """DRF exception handler: every error, expected or not, leaves in the spec's shape."""
    request_id = _request_id(context)
    headers: dict[str, str] = {}
    exc = api_error(exc) or exc
    if isinstance(exc, LedgerError):
        status, errors = exc.status_code, exc.as_errors()
        if getattr(exc, "retry_after", None) is not None:  # 429s and 503s that know when
            headers["Retry-After"] = str(exc.retry_after)
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="api"'
    elif isinstance(exc, RequestDataTooBig):
        # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE (= LEDGER_MAX_BODY_BYTES).
        too_big = body_too_large()
        status, errors = too_big.status_code, too_big.as_errors()
    elif isinstance(exc, SuspiciousOperation):
        # e.g. TooManyFieldsSent from a form body: the client's fault, never a 500.
        status, errors = 400, [{"code": "BAD_REQUEST", "message": "The request is malformed.", "field": None}]
    elif isinstance(exc, drf_exceptions.ValidationError):
        status, errors = 400, flatten_validation(exc.detail)
    elif isinstance(exc, (Http404, drf_exceptions.NotFound)):
        status, errors = 404, [{"code": "NOT_FOUND", "message": "No such record.", "field": None}]
    elif isinstance(exc, (DjangoPermissionDenied,)):
        status, errors = 403, [{"code": "FORBIDDEN", "message": "Forbidden.", "field": None}]
    elif isinstance(exc, drf_exceptions.Throttled):
        wait = int(exc.wait or 1)
        status, errors = 429, [{"code": "RATE_LIMITED", "message": f"Too many requests; retry after {wait} s.", "field": None}]
        headers["Retry-After"] = str(wait)
    elif isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        status = 401
        errors = [{"code": "UNAUTHENTICATED", "message": str(exc.detail), "field": None}]
        headers["WWW-Authenticate"] = 'Bearer realm="api"'
    elif isinstance(exc, drf_exceptions.APIException):
        status = exc.status_code
        errors = [{"code": _code(exc.default_code if not hasattr(exc.detail, "code") else exc.detail.code), "message": str(exc.detail), "field": None}]
    else:
        # Unexpected: log with the request id, never send the trace.
        logger.exception("unhandled error", extra={"view": type(context.get("view")).__name__})
        status = 500
        errors = [{"code": "INTERNAL_ERROR", "message": "Internal server error. Quote the requestId when reporting it.", "field": None}]
    if status >= 500 and isinstance(exc, LedgerError):
        logger.error("request failed: %s %s", exc.code, exc.message)
    return Response(error_body(errors, request_id), status=status, headers=headers)


def body_too_large() -> PayloadTooLargeError:
    from django.conf import settings

    return PayloadTooLargeError(f"The request body is over {settings.LEDGER_MAX_BODY_BYTES} bytes (LEDGER_MAX_BODY_BYTES).")


def ledger_error_response(request, exc: LedgerError) -> JsonResponse:
    """A LedgerError raised before DRF runs (middleware: limits, x-request-id)."""
    return JsonResponse(error_body(exc.as_errors(), getattr(request, "request_id", None)), status=exc.status_code)


def json_error(request, status: int, code: str, message: str) -> JsonResponse:
    """Error responses produced outside DRF (unknown URL, Django-level 500)."""
    return JsonResponse(error_body([{"code": code, "message": message, "field": None}], getattr(request, "request_id", None)), status=status)


def handler404(request, exception=None):
    return json_error(request, 404, "NOT_FOUND", "No such endpoint.")


def handler500(request):
    return json_error(request, 500, "INTERNAL_ERROR", "Internal server error. Quote the requestId when reporting it.")


def handler400(request, exception=None):
    return json_error(request, 400, "BAD_REQUEST", "Bad request.")


def handler403(request, exception=None):
    return json_error(request, 403, "FORBIDDEN", "Forbidden.")
