"""Job definitions: the JSON document, its validation into a :class:`Job`, its hash.

A job is ``{"tasks": [task, ...]}``, run as a pipeline: each task takes the value the one
before it left and leaves a new one. A task is an object with exactly one key, its kind
(docs/marketdata.md, "Job definitions"):

- ``httpTask {url, method?, headers?}``: GET the URL; leaves the answer (a JSON document).
- ``jsonParseTask {path}``: the number at a JSON path (jsonpath.py) of that answer.
- ``valueTask {value}``: a constant.
- ``multiplyTask`` / ``divideTask`` ``{scalar}`` or ``{job}``: the value times / divided by a
  constant or by what another job yields.
- ``medianTask`` / ``meanTask`` ``{jobs, minSuccessfulRequired?, maxRangePercent?}``: runs
  its jobs independently and combines their values (evaluate.py).

Validation is static, so a definition that saves can only fail at evaluation for reasons
outside it (a source down, an answer without the path, a division by a zero answer). Every
error names its place as a path from ``root``:
``jobDefinition.tasks[1].medianTask.jobs[0].tasks[0].httpTask.url``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from decimal import Decimal

from marketdata.jobs import limits
from marketdata.jobs.errors import JobDefinitionError
from marketdata.jobs.jsonpath import JsonPath, JsonPathSyntaxError
from marketdata.jobs.jsonpath import parse as parse_json_path
from marketdata.jobs.numbers import NotANumber, decimal_from_text


@dataclass(frozen=True)
class HttpTask:
    where: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    method: str = "GET"


@dataclass(frozen=True)
class JsonParseTask:
    where: str
    path: JsonPath


@dataclass(frozen=True)
class ValueTask:
    where: str
    value: Decimal


@dataclass(frozen=True)
class ArithmeticTask:
    """multiplyTask / divideTask: by ``scalar`` or by the value of ``job``."""

    where: str
    operation: str  # "multiply" | "divide"
    scalar: Decimal | None = None
    job: Job | None = None


@dataclass(frozen=True)
class AggregateTask:
    """medianTask / meanTask."""

    where: str
    kind: str  # "median" | "mean"
    jobs: tuple[Job, ...]
    min_successful: int
    max_range_percent: Decimal | None = None


Task = HttpTask | JsonParseTask | ValueTask | ArithmeticTask | AggregateTask


@dataclass(frozen=True)
class Job:
    where: str
    tasks: tuple[Task, ...]
    depth: int = 1  # the top-level job is 1, a medianTask's jobs in it 2, ...

    def sources(self) -> list[HttpTask]:
        """Every httpTask, nested jobs included, in document order."""
        found: list[HttpTask] = []
        for task in self.tasks:
            if isinstance(task, HttpTask):
                found.append(task)
            elif isinstance(task, ArithmeticTask) and task.job is not None:
                found += task.job.sources()
            elif isinstance(task, AggregateTask):
                for job in task.jobs:
                    found += job.sources()
        return found


# --- JSON text ------------------------------------------------------------------------------


class _Object(dict):
    """A JSON object that remembers the member names it saw twice (refused: which one
    counts is a parser's accident)."""

    duplicates: tuple[str, ...] = ()


def _object(pairs):
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def load(text: str, root: str = "jobDefinition"):
    """The definition's JSON (numbers as Decimal/int), or JobDefinitionError at ``root``."""
    if not isinstance(text, str):
        raise JobDefinitionError("The job definition is a string holding a JSON object.", root)
    if len(text.encode("utf-8", errors="surrogatepass")) > limits.MAX_DEFINITION_BYTES:
        raise JobDefinitionError(f"The job definition is longer than {limits.MAX_DEFINITION_BYTES} bytes.", root)
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=_no_constant, object_pairs_hook=_object)
    except RecursionError:
        raise JobDefinitionError("The job definition is nested too deeply.", root) from None
    except ValueError as exc:  # JSONDecodeError included
        raise JobDefinitionError(f"The job definition is not valid JSON: {exc}.", root) from None


def _canonical(value) -> str:
    """Sorted keys, no whitespace, UTF-8 text, numbers as written (Decimal keeps "1.50")."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_canonical(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def canonical_json(text: str) -> str:
    return _canonical(load(text))


def job_hash(text: str) -> bytes:
    """SHA-256 of the definition's canonical JSON (sorted keys, no whitespace, numbers as
    written): the same job written with other spacing or member order has the same hash.
    JobDefinitionError when the text is not a JSON document (nothing else is checked)."""
    return hashlib.sha256(canonical_json(text).encode("utf-8", errors="surrogatepass")).digest()


# --- validation ------------------------------------------------------------------------------

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
#: headers the service sets or that would change how the answer is framed or where it goes
_RESERVED_HEADERS = {"host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
                     "upgrade", "accept-encoding", "expect", "forwarded", "via"}
_RESERVED_PREFIXES = ("proxy-", "x-forwarded-", "x-ledger-")


class _Parser:
    def __init__(self):
        self.tasks = 0
        self.sources = 0

    def fail(self, message: str, path: str, code: str | None = None):
        raise JobDefinitionError(message, path, code=code)

    def members(self, obj, path: str, required: set[str], optional: set[str] = frozenset()) -> None:
        if not isinstance(obj, dict):
            self.fail("Expected a JSON object.", path)
        if getattr(obj, "duplicates", ()):
            self.fail(f"The member {obj.duplicates[0]!r} appears twice.", f"{path}.{obj.duplicates[0]}")
        for name in obj:
            if name not in required | optional:
                allowed = ", ".join(sorted(required | optional))
                self.fail(f"Unknown member {name!r}; allowed: {allowed}.", f"{path}.{name}" if _TOKEN.match(name) else path)
        for name in sorted(required):
            if obj.get(name) is None:
                self.fail(f"{name!r} is required.", f"{path}.{name}")

    def decimal(self, value, path: str) -> Decimal:
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, Decimal)):
            self.fail("Expected a decimal string such as \"100\" or \"0.001\".", path)
        try:
            return decimal_from_text(value if isinstance(value, str) else str(value))
        except NotANumber as exc:
            self.fail(f"Expected a finite decimal: {exc}.", path)

    def job(self, obj, path: str, depth: int) -> Job:
        if depth > limits.MAX_JOB_DEPTH:
            self.fail(f"Jobs are nested at most {limits.MAX_JOB_DEPTH} deep.", path)
        self.members(obj, path, {"tasks"})
        raw_tasks = obj["tasks"]
        if not isinstance(raw_tasks, list):
            self.fail("'tasks' is an array of tasks.", f"{path}.tasks")
        if not raw_tasks:
            self.fail("A job has at least one task.", f"{path}.tasks")
        if len(raw_tasks) > limits.MAX_TASKS_PER_JOB:
            self.fail(f"A job has at most {limits.MAX_TASKS_PER_JOB} tasks.", f"{path}.tasks")
        tasks: list[Task] = []
        state = "start"  # what the pipeline holds: "start" (nothing), "answer" (an HTTP answer), "number"
        for index, raw in enumerate(raw_tasks):
            task_path = f"{path}.tasks[{index}]"
            self.tasks += 1
            if self.tasks > limits.MAX_TASKS:
                self.fail(f"A job definition has at most {limits.MAX_TASKS} tasks (nested jobs included).", task_path)
            task, state = self.task(raw, task_path, state, depth)
            tasks.append(task)
        if state != "number":
            self.fail("The job ends with an HTTP answer: add a jsonParseTask to take a number out of it.", f"{path}.tasks[{len(raw_tasks) - 1}]")
        return Job(path, tuple(tasks), depth)

    def task(self, raw, path: str, state: str, depth: int) -> tuple[Task, str]:
        if not isinstance(raw, dict) or len(raw) != 1:
            self.fail("A task is an object with exactly one member, its kind (httpTask, jsonParseTask, valueTask, multiplyTask, "
                      "divideTask, medianTask, meanTask).", path)
        if getattr(raw, "duplicates", ()):
            self.fail("A task is an object with exactly one member.", path)
        (kind, body), = raw.items()
        here = f"{path}.{kind}"
        starts = kind in ("httpTask", "valueTask", "medianTask", "meanTask")
        if starts and state != "start":
            self.fail(f"{kind} starts a job: it must be its first task (it would discard the value before it).", here)
        if kind == "httpTask":
            return self.http(body, here), "answer"
        if kind == "jsonParseTask":
            if state != "answer":
                self.fail("jsonParseTask reads an HTTP answer: it must follow an httpTask.", here)
            self.members(body, here, {"path"})
            try:
                return JsonParseTask(here, parse_json_path(body["path"])), "number"
            except JsonPathSyntaxError as exc:
                self.fail(f"Not a supported JSON path: {exc}.", f"{here}.path")
        if kind == "valueTask":
            self.members(body, here, {"value"})
            return ValueTask(here, self.decimal(body["value"], f"{here}.value")), "number"
        if kind in ("multiplyTask", "divideTask"):
            if state != "number":
                self.fail(f"{kind} needs a number before it (after jsonParseTask, valueTask, medianTask or meanTask).", here)
            return self.arithmetic(kind, body, here, depth), "number"
        if kind in ("medianTask", "meanTask"):
            return self.aggregate(kind, body, here, depth), "number"
        self.fail(f"Unknown task kind {kind!r}; known: httpTask, jsonParseTask, valueTask, multiplyTask, divideTask, medianTask, meanTask.",
                  f"{path}.{kind}" if _TOKEN.match(kind) else path)

    def http(self, body, here: str) -> HttpTask:
        self.members(body, here, {"url"}, {"method", "headers"})
        self.sources += 1
        if self.sources > limits.MAX_SOURCES:
            self.fail(f"A job definition calls at most {limits.MAX_SOURCES} URLs (httpTasks).", here)
        method = body.get("method", "GET")
        if method != "GET":
            self.fail("The only method is \"GET\".", f"{here}.method")
        url = body["url"]
        if not isinstance(url, str) or not url:
            self.fail("Expected a URL string.", f"{here}.url")
        if len(url) > limits.MAX_URL_CHARS:
            self.fail(f"A URL has at most {limits.MAX_URL_CHARS} characters.", f"{here}.url")
        if any(ord(c) <= 0x20 or c == "\x7f" for c in url):
            self.fail("A URL has no spaces or control characters (percent-encode them).", f"{here}.url")
        return HttpTask(here, url, self.headers(body.get("headers"), f"{here}.headers"))

    def headers(self, raw, path: str) -> tuple[tuple[str, str], ...]:
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.fail("'headers' is an object of header names and values.", path)
        if getattr(raw, "duplicates", ()):
            self.fail(f"The header {raw.duplicates[0]!r} appears twice.", path)
        if len(raw) > limits.MAX_HEADERS:
            self.fail(f"At most {limits.MAX_HEADERS} headers.", path)
        seen: set[str] = set()
        out = []
        for name, value in raw.items():
            # Values are never echoed: a header is where an API key goes.
            if not _TOKEN.match(name) or len(name) > limits.MAX_HEADER_NAME_CHARS:
                self.fail(f"Not a header name (a token of at most {limits.MAX_HEADER_NAME_CHARS} characters): {name[:limits.MAX_HEADER_NAME_CHARS]!r}.", path)
            here = f"{path}.{name}"
            lower = name.lower()
            if lower in seen:
                self.fail(f"The header {name!r} appears twice.", here)
            seen.add(lower)
            if lower in _RESERVED_HEADERS or lower.startswith(_RESERVED_PREFIXES):
                self.fail(f"The header {name!r} is one the service sets itself or refuses to send.", here)
            if not isinstance(value, str):
                self.fail("A header value is a string.", here)
            if len(value) > limits.MAX_HEADER_VALUE_CHARS:
                self.fail(f"A header value has at most {limits.MAX_HEADER_VALUE_CHARS} characters.", here)
            if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" or ord(c) > 0xFF for c in value):
                self.fail("A header value has no control characters and only Latin-1 characters.", here)
            out.append((name, value))
        return tuple(out)

    def arithmetic(self, kind: str, body, here: str, depth: int) -> ArithmeticTask:
        self.members(body, here, set(), {"scalar", "job"})
        has_scalar, has_job = body.get("scalar") is not None, body.get("job") is not None
        if has_scalar == has_job:
            self.fail(f"{kind} takes exactly one of 'scalar' (a decimal string) and 'job'.", here)
        operation = "multiply" if kind == "multiplyTask" else "divide"
        if has_scalar:
            scalar = self.decimal(body["scalar"], f"{here}.scalar")
            if operation == "divide" and scalar == 0:
                self.fail("Division by zero.", f"{here}.scalar")
            return ArithmeticTask(here, operation, scalar=scalar)
        return ArithmeticTask(here, operation, job=self.job(body["job"], f"{here}.job", depth + 1))

    def aggregate(self, kind: str, body, here: str, depth: int) -> AggregateTask:
        self.members(body, here, {"jobs"}, {"minSuccessfulRequired", "maxRangePercent"})
        raw_jobs = body["jobs"]
        if not isinstance(raw_jobs, list) or not raw_jobs:
            self.fail("'jobs' is a non-empty array of jobs.", f"{here}.jobs")
        if len(raw_jobs) > limits.MAX_JOBS_PER_AGGREGATE:
            self.fail(f"At most {limits.MAX_JOBS_PER_AGGREGATE} jobs.", f"{here}.jobs")
        jobs = tuple(self.job(raw, f"{here}.jobs[{i}]", depth + 1) for i, raw in enumerate(raw_jobs))
        minimum = body.get("minSuccessfulRequired", len(jobs))
        if isinstance(minimum, bool) or not isinstance(minimum, int) or not 1 <= minimum <= len(jobs):
            self.fail(f"minSuccessfulRequired is an integer from 1 to the number of jobs ({len(jobs)}).", f"{here}.minSuccessfulRequired")
        max_range = None
        if body.get("maxRangePercent") is not None:
            max_range = self.decimal(body["maxRangePercent"], f"{here}.maxRangePercent")
            if max_range < 0:
                self.fail("maxRangePercent is a percentage of at least 0.", f"{here}.maxRangePercent")
        return AggregateTask(here, "median" if kind == "medianTask" else "mean", jobs, minimum, max_range)


def parse_job(text: str, *, root: str = "jobDefinition", check_urls: bool = True) -> Job:
    """The job of a definition, or JobDefinitionError naming the bad part (its path from
    ``root``: a service passes its command's path, ``partner_oracle_details.job_definition``,
    which the door maps to the request's).

    Checks the JSON, the structure and order of tasks, the limits (limits.py) and, unless
    ``check_urls`` is False, every URL against ledger_project/outbound.py (https only in
    production, public addresses only: the host is resolved). Evaluation checks URLs again
    before each call, so a definition loaded from storage may skip it."""
    document = load(text, root)
    job = _Parser().job(document, root, 1)
    if check_urls:
        # After the structure: a definition with a typo costs no DNS lookup.
        from ledger_project.outbound import OutboundUrlRefused, check_outbound_url

        for task in job.sources():
            try:
                check_outbound_url(task.url, field=f"{task.where}.url")
            except OutboundUrlRefused as exc:
                raise JobDefinitionError(exc.message, f"{task.where}.url", code=exc.code) from None
    return job
