"""x-request-id idempotency for mutating operations, and the write phase of a mutation.

``@idempotent`` wraps a view method. A mutation that talks to the network runs in three
phases (docs/transactions.md, "Path of a mutation"): read and validate, build / simulate /
sign (network calls, no database writes, no locks), then one short **write phase**: the
service's ``with write_phase():`` block, where it takes its row locks, re-checks what may
have changed and writes its rows. No database transaction is open during the network
calls, so on SQLite (``BEGIN IMMEDIATE``) the global write lock is never held across RPC.

With an ``x-request-id`` (a UUID):

- a request whose record exists is replayed at once from the stored bytes (same status,
  byte-for-byte the same body, header ``x-idempotent-replay: true``);
- otherwise the view runs; the write phase opens the database transaction, inserts the
  IdempotencyRecord for (API key, request id) first, and stays open until the response
  is rendered and stored in the record, so the domain rows and the stored response commit
  together. A concurrent request with the same id blocks on the record's unique key (on
  SQLite: on BEGIN IMMEDIATE) until the first commits, then replays it: the write phase
  runs once. The read and network phases may run twice; they write nothing;
- a request that crashes (or answers 5xx) rolls back with its record, so a retry runs
  afresh and nothing half-done is ever replayed (``on_abort`` callbacks of the write phase
  run then, e.g. to release a leased nonce account) — unless an earlier attempt with the
  same id committed while it ran (the client retried while that attempt was still running):
  then it replays that attempt's answer instead of the 5xx;
- 2xx and 4xx responses are stored and replayed — except 429 (a quota or rate: "retry
  after"), rolled back like a 5xx so that the retry it asks for can succeed; the same id
  with a different method, path or body is a 409 ``REQUEST_ID_REUSED``.

``@idempotent(phased=False)`` (views that only write, like the tests' probe) keeps the
older shape: the write phase is entered before the view runs.

Records are kept LEDGER_IDEMPOTENCY_RETENTION_HOURS (default 48) and purged by the
``ledger.tenancy.purge_idempotency_records`` periodic task.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import logging
from typing import Callable

from django.db import IntegrityError, OperationalError, transaction
from django.http import HttpResponse
from rest_framework.exceptions import APIException

from chain.errors import ChainError
from ledger_project.api.errors import ConflictError, LedgerError, not_now
from ledger_project.statements import Statement

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


def _replay(record, fingerprint: str) -> HttpResponse:
    if record.body_hash != fingerprint:
        raise ConflictError(
            "This x-request-id was already used for a different request; use a new id for a new request.",
            field="x-request-id",
            code="REQUEST_ID_REUSED",
        )
    response = HttpResponse(bytes(record.response_bytes), status=record.status_code, content_type="application/json")
    response[REPLAY_HEADER] = "true"
    return response


class _Replay(Exception):
    """A concurrent request with the same id committed first: replay it."""


def _rendered_bytes(view, request, response) -> bytes:
    """The body exactly as it will be sent: rendered by the view's negotiated renderer
    (LedgerJSONRenderer: Decimal amounts keep their digits, keys their order). The
    response is finalized as DRF's dispatch would, but not marked rendered, so work
    after the commit (``after_commit``) still renders what it sets."""
    view.finalize_response(request, response)
    return bytes(response.rendered_content)


class _Pending:
    """One idempotent request whose write phase has not committed yet."""

    def __init__(self, view, request, request_id, fingerprint: str | None):
        self.view, self.request, self.request_id, self.fingerprint = view, request, request_id, fingerprint
        self.outer = self.inner = None
        self.record = None
        self.on_abort: list[Callable[[], None]] = []

    @property
    def entered(self) -> bool:
        return self.outer is not None

    def begin(self) -> None:
        """Open the write phase: the database transaction, the record first, then a
        savepoint for the operation's own rows (a 4xx rolls back to it, keeping the record)."""
        from tenancy.models import IdempotencyRecord

        self.outer = transaction.atomic()
        self.outer.__enter__()
        if self.request_id is not None:
            try:
                # No savepoint: the record is the transaction's first row, so a duplicate
                # (IntegrityError) rolls the whole transaction back (rollback()) anyway.
                with transaction.atomic(savepoint=False):
                    self.record = IdempotencyRecord.objects.create(
                        api_key=self.request.user, request_id=self.request_id, method=self.request.method,
                        path=self.request.path[:300], body_hash=self.fingerprint,
                    )
            except IntegrityError:
                raise _Replay()
        self.inner = transaction.atomic()
        self.inner.__enter__()

    def rollback(self, exc: BaseException) -> None:
        info = (type(exc), exc, exc.__traceback__)
        try:
            for part in (self.inner, self.outer):
                if part is not None:
                    part.__exit__(*info)
        finally:
            self.inner = self.outer = None
            callbacks, self.on_abort = self.on_abort, []
            for callback in callbacks:
                callback()

    def commit(self, response, *, failed: BaseException | None) -> None:
        """Store the response with the rows (a 4xx: without the operation's rows, and
        the ``on_abort`` actions run once the record is stored)."""
        if not self.entered:
            self.begin()
        if failed is not None:
            self.inner.__exit__(type(failed), failed, failed.__traceback__)
        else:
            self.inner.__exit__(None, None, None)
        self.inner = None
        if self.record is not None:
            self.record.status_code = response.status_code
            self.record.response_bytes = _rendered_bytes(self.view, self.request, response)
            self.record.save(update_fields=["status_code", "response_bytes"])
        outer, self.outer = self.outer, None
        outer.__exit__(None, None, None)
        callbacks, self.on_abort = self.on_abort, []
        if failed is not None:
            # A 4xx rolled the operation's rows back (only the record stays, for replay):
            # release what the operation held (a nonce lease) now, not at the reclaim.
            for callback in callbacks:
                callback()


_pending: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar("ledger_write_phase", default=None)


@contextlib.contextmanager
def write_phase(*, on_abort: Callable[[], None] | None = None):
    """The one short database transaction of a mutation (locks, re-checks, writes).

    Inside an idempotent request, the first write phase opens the request's database
    transaction and it stays open until the response is stored (see the module
    docstring); nested or later write phases are savepoints in it. Elsewhere (admin,
    workers, tests calling services) it is a plain ``transaction.atomic()``.
    ``on_abort`` runs when the write phase does not commit.
    """
    pending = _pending.get()
    if pending is None:
        try:
            with transaction.atomic():
                yield
        except BaseException:
            if on_abort is not None:
                on_abort()
            raise
        return
    if not pending.entered:
        if on_abort is not None:
            pending.on_abort.append(on_abort)  # before begin(): a replayed duplicate releases too
        pending.begin()
        yield
        return
    if on_abort is not None:
        pending.on_abort.append(on_abort)
    with transaction.atomic():
        yield


def _run(view, request, view_method, args, kwargs, pending: _Pending):
    token = _pending.set(pending)
    try:
        try:
            response = view_method(view, request, *args, **kwargs)
            failed = None
        except (LedgerError, ChainError, APIException) as exc:
            response = view.handle_exception(exc)
            if not_now(response.status_code):
                # "Not now" is not an answer to keep: a 429 (a quota, a rate) is rolled
                # back like a 5xx, so the same request id runs afresh once it may.
                raise
            failed = exc
        pending.commit(response, failed=failed)
        return response
    except BaseException as exc:
        pending.rollback(exc)
        raise
    finally:
        _pending.reset(token)


_RECORD = Statement("idempotency.record")


def _run_once(view, request, request_id, view_method, args, kwargs, phased: bool):
    from tenancy.models import IdempotencyRecord

    fingerprint = None
    if request_id is not None:
        fingerprint = request_fingerprint(request)
        # Unique per (key, id): no ORDER BY; compiled once.
        record = next(iter(_RECORD.fetch(IdempotencyRecord.objects.filter(api_key=request.user, request_id=request_id).order_by()[:1])), None)
        if record is not None:
            return _replay(record, fingerprint)
    pending = _Pending(view, request, request_id, fingerprint)
    method = view_method
    if not phased:
        def method(v, r, *a, **k):
            pending.begin()
            return view_method(v, r, *a, **k)
    try:
        return _run(view, request, method, args, kwargs, pending)
    except _Replay:
        # The first request committed while we waited on the unique key.
        return _replay(IdempotencyRecord.objects.get(api_key=request.user, request_id=request_id), fingerprint)
    except Exception:
        # A 5xx or a crash of this attempt (rolled back: it stored nothing). When an earlier
        # attempt with the same id committed meanwhile — it was still running when its client
        # retried, after a timeout or a lost connection — the operation happened and may be on
        # its way to the chain: its answer is this request's, never the 5xx.
        committed = _committed_meanwhile(request, request_id) if request_id is not None else None
        if committed is None:
            raise
        logger.info("an earlier attempt of request %s committed while this one ran; replaying it", request_id)
        return _replay(committed, fingerprint)


def _committed_meanwhile(request, request_id):
    from tenancy.models import IdempotencyRecord

    try:
        return next(iter(IdempotencyRecord.objects.filter(api_key=request.user, request_id=request_id).order_by()[:1]), None)
    except Exception:  # noqa: BLE001 - the database failed too: the original error stands
        return None


logger = logging.getLogger("ledger.api")

#: Runs of a mutation that lost a deadlock (or a serialization conflict) to another
#: transaction: the database rolled the whole write phase back, so running the request
#: again from the start is safe (nothing was stored or sent; a leased nonce was released).
_ATTEMPTS = 3


def _lost_a_conflict(exc: OperationalError) -> bool:
    try:
        from psycopg import errors
    except ImportError:  # pragma: no cover - psycopg is a requirement
        return False
    return isinstance(exc.__cause__, (errors.DeadlockDetected, errors.SerializationFailure))


def _run_retrying(view, request, request_id, fn, args, kwargs, phased: bool):
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return _run_once(view, request, request_id, fn, args, kwargs, phased)
        except OperationalError as exc:
            if attempt == _ATTEMPTS or not _lost_a_conflict(exc):
                raise
            logger.info("the write phase lost a lock conflict (%s); running the request again (attempt %d)", type(exc.__cause__).__name__, attempt + 1)


def _after_commit(work: Callable, response) -> None:
    """Run a committed request's after-commit work (``?wait=``). It cannot undo the
    commit: its transaction is recorded and may reach the chain, and the stored replay
    is the pre-wait answer. So whatever it raises (a chain or database outage while
    waiting), the request answers that pre-wait answer, never a 5xx — a 5xx would make
    the client retry a write that happened, and a retry replays the stored answer anyway."""
    import copy

    before = copy.deepcopy(response.data)
    try:
        work(response)
    except Exception:  # noqa: BLE001 - anything: the write committed
        logger.warning("the wait after commit failed; answering the committed result as it was", exc_info=True)
        response.data = before


def idempotent(view_method=None, *, phased: bool = True):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(self, request, *args, **kwargs):
            request_id = client_request_id(request)
            response = _run_retrying(self, request, request_id, fn, args, kwargs, phased)
            # Work that must follow the commit (e.g. ?wait=confirmed: the worker only sees
            # the transaction once it is committed). The stored replay keeps the pre-wait body.
            after_commit = getattr(response, "after_commit", None)
            if after_commit is not None:
                _after_commit(after_commit, response)
            return response

        wrapper.idempotent = True
        return wrapper

    return decorate(view_method) if view_method is not None else decorate
