"""Evaluating a job: outbound calls, extraction, arithmetic, aggregation, and the record.

:func:`evaluate` never raises for what sources do: a source down, slow, answering non-JSON,
without the path or with a non-number is recorded (its SourceRecord's ``error`` and a line
in ``errors``) and the job fails or goes on without it (medianTask/meanTask). ``result`` is
None and ``ok`` False when no value came out.

Time (docs/marketdata.md, "Evaluation"): one deadline, ``timeout_seconds`` after the start,
bounds everything. Each call's httpx timeout is what is left of it, and a body still
arriving at the deadline is cut (outbound_send's ``deadline``). The root job and each job of
a medianTask/meanTask run in threads of their own; the caller waits for them until the
deadline (plus GRACE_SECONDS per level, to combine what arrived) and no longer — a job
still running then is recorded as having no value and left to end on its own (its calls
end at the deadline plus at most one read timeout), and nothing it does later reaches the
record.

Calls go through ledger_project/outbound.py, as webhook deliveries do: the URL is checked
again right before the call (DNS rebinding) and the connection goes to the checked
address; redirects are not followed; the answer is read up to MAX_RESPONSE_BYTES. Header
values (where API keys go) are never recorded nor logged; URLs in log lines are redacted
by the logging filter.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
import time
from concurrent.futures import Future, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

from ledger_project.logging import redact_urls
from ledger_project.timestamps import timestamp_text
from marketdata.jobs import limits
from marketdata.jobs.definition import AggregateTask, ArithmeticTask, HttpTask, Job, JsonParseTask, ValueTask
from marketdata.jobs.jsonpath import JsonPathNoValue
from marketdata.jobs.numbers import CONTEXT, NotANumber, decimal_from_json, deviation_percent, mean, median

logger = logging.getLogger("ledger.marketdata")

USER_AGENT = "ledger-marketdata/1"

#: How long after the deadline a job's caller still waits for it, per level of nesting
#: below: a medianTask whose slowest source hits the deadline still needs a moment to
#: combine the others, and its own caller must not give up on it in that moment. Deeper
#: jobs are given up on first, so evaluate() returns at most MAX_JOB_DEPTH × GRACE after
#: the deadline.
GRACE_SECONDS = 0.1


@dataclass(frozen=True)
class SourceRecord:
    """One httpTask's call: ``value`` is what the jsonParseTask after it extracted."""

    path: str
    url: str
    status_code: int | None
    excerpt: str
    value: Decimal | None
    error: str
    elapsed_ms: int

    def to_record(self) -> dict:
        return {"path": self.path, "url": self.url, "statusCode": self.status_code, "excerpt": self.excerpt,
                "value": None if self.value is None else str(self.value), "error": self.error, "elapsedMs": self.elapsed_ms}


@dataclass(frozen=True)
class Evaluation:
    result: Decimal | None
    ok: bool
    sources: list[SourceRecord]
    errors: list[str]
    started_at: datetime
    elapsed_ms: int

    def to_record(self) -> dict:
        """JSON-serialisable, Decimals as strings (exact), times as ISO 8601 UTC."""
        return {"ok": self.ok, "result": None if self.result is None else str(self.result), "startedAt": timestamp_text(self.started_at),
                "elapsedMs": self.elapsed_ms, "sources": [s.to_record() for s in self.sources], "errors": list(self.errors)}


class _Failed(Exception):
    """A job that yields no value: ``where`` is the task's path."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


@dataclass
class _Answer:
    document: object
    source: int  # index in the recorder


class _Recorder:
    """What an evaluation records, shared by its threads. After ``close`` late writes (a
    thread that outlived the deadline) are dropped."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sources: list[dict] = []
        self.errors: list[str] = []
        self.closed = False

    def source(self, task: HttpTask) -> int:
        with self.lock:
            self.sources.append({"path": task.where, "url": task.url, "status_code": None, "excerpt": "", "value": None, "error": "",
                                 "elapsed_ms": None, "begun": time.monotonic()})
            return len(self.sources) - 1

    def update(self, index: int, **fields) -> None:
        with self.lock:
            if not self.closed:
                self.sources[index].update(fields)

    def finish(self, index: int, **fields) -> None:
        with self.lock:
            if not self.closed:
                source = self.sources[index]
                source.update(fields, elapsed_ms=int((time.monotonic() - source["begun"]) * 1000))

    def error(self, message: str) -> None:
        with self.lock:
            if not self.closed:
                self.errors.append(message)

    def close(self, timeout_seconds: float) -> tuple[list[SourceRecord], list[str]]:
        with self.lock:
            self.closed = True
            now = time.monotonic()
            records = []
            for source in self.sources:
                begun, elapsed = source.pop("begun"), source.pop("elapsed_ms")
                if elapsed is None:  # still calling when the deadline came
                    elapsed = int((now - begun) * 1000)
                    source["error"] = source["error"] or f"no answer within the evaluation's time limit ({timeout_seconds:g} s)"
                records.append(SourceRecord(**source, elapsed_ms=elapsed))
            return records, list(self.errors)


def _spawn(function, *args) -> Future:
    """``function(*args)`` in a daemon thread (a thread left behind at the deadline must not
    hold the worker's exit), with the caller's context (the request id of log lines)."""
    future: Future = Future()
    context = contextvars.copy_context()

    def target():
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(function, *args))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=target, name="marketdata-job", daemon=True).start()
    return future


class _Run:
    def __init__(self, *, client, timeout_seconds: float, deadline: float, recorder: _Recorder):
        self.client = client
        self.timeout_seconds = timeout_seconds
        self.deadline = deadline
        self.recorder = recorder

    def remaining(self, where: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Failed(where, f"the evaluation's time limit ({self.timeout_seconds:g} s) was used up")
        return left

    def job(self, job: Job) -> Decimal:
        state: _Answer | Decimal | None = None
        for task in job.tasks:
            self.remaining(task.where)
            if isinstance(task, HttpTask):
                state = self.fetch(task)
            elif isinstance(task, JsonParseTask):
                state = self.extract(task, state)
            elif isinstance(task, ValueTask):
                state = task.value
            elif isinstance(task, ArithmeticTask):
                state = self.arithmetic(task, state)
            elif isinstance(task, AggregateTask):
                state = self.aggregate(task)
            else:  # parse_job builds only the kinds above
                raise TypeError(f"unknown task {type(task).__name__}")
        # parse_job guarantees a job ends with a number.
        return state

    def fetch(self, task: HttpTask) -> _Answer:
        import httpx

        from ledger_project.outbound import OutboundUrlRefused, outbound_send

        index = self.recorder.source(task)
        status, excerpt = None, ""
        try:
            headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": USER_AGENT}
            for name, value in task.headers:  # the definition's own Accept / User-Agent win
                headers = {k: v for k, v in headers.items() if k.lower() != name.lower()}
                headers[name] = value
            answer = outbound_send(self.client, task.method, task.url, headers=headers, timeout=httpx.Timeout(self.remaining(task.where)),
                                   max_body_bytes=limits.MAX_RESPONSE_BYTES, deadline=self.deadline)
            status = answer.status_code
            excerpt = answer.body[:limits.EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:limits.EXCERPT_CHARS]
            if not 200 <= status < 300:
                raise _Failed(task.where, f"the source answered HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else ""))
            if answer.truncated:
                raise _Failed(task.where, f"the answer is longer than {limits.MAX_RESPONSE_BYTES} bytes")
            try:
                document = json.loads(answer.body, parse_float=Decimal, parse_constant=Decimal)
            except RecursionError:
                raise _Failed(task.where, "the answer is JSON nested too deeply") from None
            except ValueError as exc:
                raise _Failed(task.where, f"the answer is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
        except _Failed as failed:
            self.recorder.finish(index, status_code=status, excerpt=excerpt, error=failed.message)
            raise
        except OutboundUrlRefused as exc:
            return self._fetch_failed(index, task, f"URL_NOT_ALLOWED: {exc.message}")
        except httpx.TimeoutException:
            return self._fetch_failed(index, task, f"no answer within the evaluation's time limit ({self.timeout_seconds:g} s)", status, excerpt)
        except httpx.HTTPError as exc:
            return self._fetch_failed(index, task, f"{type(exc).__name__}: {redact_urls(str(exc))[:300]}", status, excerpt)
        self.recorder.finish(index, status_code=status, excerpt=excerpt)
        return _Answer(document, index)

    def _fetch_failed(self, index: int, task: HttpTask, message: str, status: int | None = None, excerpt: str = ""):
        self.recorder.finish(index, status_code=status, excerpt=excerpt, error=message)
        raise _Failed(task.where, message)

    def extract(self, task: JsonParseTask, state: _Answer) -> Decimal:
        try:
            value = decimal_from_json(task.path.find(state.document))
        except JsonPathNoValue as exc:
            message = f"no value at {task.path.text}: {exc}"
        except NotANumber as exc:
            message = f"the value at {task.path.text} is not a number: {exc}"
        else:
            self.recorder.update(state.source, value=value)
            return value
        self.recorder.update(state.source, error=message)
        raise _Failed(task.where, message)

    def arithmetic(self, task: ArithmeticTask, value: Decimal) -> Decimal:
        operand = task.scalar if task.job is None else self.job(task.job)
        try:
            if task.operation == "multiply":
                return CONTEXT.multiply(value, operand)
            if operand == 0:
                raise _Failed(task.where, f"division by zero ({task.job.where} yielded 0)")
            return CONTEXT.divide(value, operand)
        except ArithmeticError as exc:
            raise _Failed(task.where, f"{task.operation} of {value} by {operand} is out of range ({type(exc).__name__})") from None

    def wait(self, futures: list[Future], *, depth: int) -> None:
        """Wait for jobs at ``depth`` until the deadline plus their share of grace."""
        until = self.deadline + GRACE_SECONDS * (limits.MAX_JOB_DEPTH + 1 - depth)
        wait(futures, timeout=max(0.0, until - time.monotonic()))

    def aggregate(self, task: AggregateTask) -> Decimal:
        """The jobs run at once; the value of each that succeeds in time counts. With
        ``maxRangePercent``, a value further than that from the median of the values is
        dropped as an outlier (once: the median is not recomputed to drop more). Fewer
        than ``minSuccessfulRequired`` values left: the task fails."""
        futures = [_spawn(self.job, job) for job in task.jobs]
        self.wait(futures, depth=task.jobs[0].depth)
        values: list[tuple[Job, Decimal]] = []
        for job, future in zip(task.jobs, futures):
            if not future.done():
                self.recorder.error(f"{job.where}: no value within the evaluation's time limit ({self.timeout_seconds:g} s)")
                continue
            exc = future.exception()
            if isinstance(exc, _Failed):
                self.recorder.error(str(exc))
            elif exc is not None:
                raise exc
            else:
                values.append((job, future.result()))
        kept = values
        if task.max_range_percent is not None and values:
            middle = median([value for _, value in values])
            kept = []
            for job, value in values:
                deviation = deviation_percent(value, middle)
                if deviation is not None and deviation <= task.max_range_percent:
                    kept.append((job, value))
                else:
                    far = "infinitely" if deviation is None else f"{CONTEXT.quantize(deviation, Decimal('0.01'))}%"
                    self.recorder.error(f"{job.where}: dropped as an outlier: {value} is {far} away from the median {middle} "
                                        f"(maxRangePercent {task.max_range_percent})")
        if len(kept) < task.min_successful:
            raise _Failed(task.where, f"{len(kept)} of {len(task.jobs)} jobs gave a usable value; minSuccessfulRequired is {task.min_successful}")
        numbers = [value for _, value in kept]
        return median(numbers) if task.kind == "median" else mean(numbers)


def evaluate(job: Job, *, timeout_seconds: float, client=None) -> Evaluation:
    """Run ``job`` (from parse_job) once, within ``timeout_seconds`` (at most
    MAX_TIMEOUT_SECONDS). ``client``: an httpx client from ``outbound_client()`` to reuse
    (a worker's pooled one); by default one is made for this evaluation and closed after."""
    if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, (int, float)) or not 0 < timeout_seconds <= limits.MAX_TIMEOUT_SECONDS:
        raise ValueError(f"timeout_seconds must be in (0, {limits.MAX_TIMEOUT_SECONDS:g}]")
    from ledger_project.outbound import outbound_client

    started_at = datetime.now(timezone.utc)
    begun = time.monotonic()
    own_client = client is None and bool(job.sources())  # a TLS context costs ~0.2 s: only when something is called
    if own_client:
        client = outbound_client()
    recorder = _Recorder()
    run = _Run(client=client, timeout_seconds=float(timeout_seconds), deadline=begun + timeout_seconds, recorder=recorder)
    result = None
    try:
        root = _spawn(run.job, job)
        run.wait([root], depth=job.depth)
        if not root.done():
            recorder.error(f"{job.where}: no value within the evaluation's time limit ({timeout_seconds:g} s)")
        elif isinstance(root.exception(), _Failed):
            recorder.error(str(root.exception()))
        elif root.exception() is not None:
            exc = root.exception()
            logger.error("market-data job evaluation failed unexpectedly", exc_info=(type(exc), exc, exc.__traceback__))
            recorder.error(f"{job.where}: internal error ({type(exc).__name__})")
        else:
            result = root.result()
    finally:
        sources, errors = recorder.close(float(timeout_seconds))
        if own_client:
            client.close()
    elapsed_ms = int((time.monotonic() - begun) * 1000)
    return Evaluation(result=result, ok=result is not None, sources=sources, errors=errors, started_at=started_at, elapsed_ms=elapsed_ms)
