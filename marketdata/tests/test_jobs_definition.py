"""Job definitions are validated when saved (docs/marketdata.md, "Job definitions"): every
refusal is a 400 naming the bad part's path; what passes is a Job the evaluator can run."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from ledger_project.api.errors import LedgerError
from marketdata.jobs import JobDefinitionError, job_hash, parse_job
from marketdata.jobs.definition import AggregateTask, ArithmeticTask, HttpTask, JsonParseTask
from marketdata.tests.jobkit import definition, http, median, parse, source, value

DOCS = Path(__file__).resolve().parents[2] / "docs" / "marketdata.md"
ROOT = "jobDefinition"


def test_the_documented_full_example_is_a_valid_job():
    text = DOCS.read_text()
    example = re.search(r"### Full example\n.*?```json\n(.*?)```", text, re.S).group(1)
    job = parse_job(example)
    top, divide = job.tasks
    assert isinstance(top, AggregateTask) and top.kind == "median" and top.min_successful == 2 and top.max_range_percent == Decimal("2")
    assert [task.url for task in job.sources()] == ["https://api.exchange-a.example/v1/ticker?symbol=BTCUSD", "https://api.exchange-b.example/markets/BTC-USD",
                                                   "https://exchange-c.example/quote/btc", "https://fx-one.example/latest?base=EUR&symbols=USD",
                                                   "https://fx-two.example/eurusd"]
    assert job.sources()[1].headers == (("X-Api-Key", "tenant-key-for-exchange-b"),)
    assert top.jobs[1].tasks[1].path.segments == ("data", 0, "last-trade", "px")
    assert isinstance(divide, ArithmeticTask) and divide.operation == "divide" and divide.job.tasks[0].kind == "mean"
    assert divide.job.tasks[0].min_successful == 1 and divide.job.depth == 2 and divide.job.tasks[0].jobs[0].depth == 3


def test_a_job_keeps_every_task_with_its_path_and_exact_numbers():
    job = parse_job(definition(median(source("https://a.example/p"), source("https://b.example/p", "$['x'][1]"), minSuccessfulRequired=1),
                               {"multiplyTask": {"scalar": "0.000000001"}}, {"divideTask": {"scalar": 3}}))
    aggregate, multiply, divide = job.tasks
    assert aggregate.where == "jobDefinition.tasks[0].medianTask" and aggregate.min_successful == 1 and aggregate.max_range_percent is None
    first = aggregate.jobs[0].tasks
    assert isinstance(first[0], HttpTask) and first[0].where == "jobDefinition.tasks[0].medianTask.jobs[0].tasks[0].httpTask" and first[0].method == "GET"
    assert isinstance(first[1], JsonParseTask) and first[1].path.segments == ("price",)
    assert multiply.scalar == Decimal("0.000000001") and isinstance(multiply.scalar, Decimal)
    assert divide.scalar == Decimal(3)
    assert parse_job(definition(median(source(), source()))).tasks[0].min_successful == 2  # default: every job


def _deep(levels: int) -> dict:
    job = source()
    for _ in range(levels):
        job = {"tasks": [median(job)]}
    return job


def _tasks(n: int) -> list:
    return [value("1")] + [{"multiplyTask": {"scalar": "1"}}] * (n - 1)


INVALID = [
    ("not json", ROOT, None),
    ("[]", ROOT, None),
    ('{"tasks": [{"valueTask": {"value": NaN}}]}', ROOT, None),
    ("x" * 40_000, ROOT, None),
    ("[" * 30_000 + "]" * 30_000, ROOT, None),
    (definition(), f"{ROOT}.tasks", None),
    (json.dumps({"tasks": [value("1")], "name": "btc"}), f"{ROOT}.name", None),
    ('{"tasks": [{"valueTask": {"value": "1"}}], "tasks": []}', f"{ROOT}.tasks", None),
    (definition({"fetchTask": {"url": "https://prices.example/"}}), f"{ROOT}.tasks[0].fetchTask", None),
    (definition({**http(), **parse()}), f"{ROOT}.tasks[0]", None),
    (definition("httpTask"), f"{ROOT}.tasks[0]", None),
    (definition({"httpTask": {"method": "GET"}}, parse()), f"{ROOT}.tasks[0].httpTask.url", None),
    (definition(http(method="POST"), parse()), f"{ROOT}.tasks[0].httpTask.method", None),
    (definition(http(timeout=5), parse()), f"{ROOT}.tasks[0].httpTask.timeout", None),
    (definition(http("https://prices.example/a b"), parse()), f"{ROOT}.tasks[0].httpTask.url", None),
    (definition(http("https://prices.example/" + "a" * 2048), parse()), f"{ROOT}.tasks[0].httpTask.url", None),
    ('{"tasks": [{"httpTask": {"url": "https://prices.example/", "url": "https://10.0.0.8/"}}, {"jsonParseTask": {"path": "$.p"}}]}',
     f"{ROOT}.tasks[0].httpTask.url", None),
    (definition(median(source(), {"tasks": [http("https://10.0.0.8/price"), parse()]})), f"{ROOT}.tasks[0].medianTask.jobs[1].tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(http("https://169.254.169.254/latest/meta-data"), parse()), f"{ROOT}.tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(http("ftp://prices.example/btc"), parse()), f"{ROOT}.tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(http("https://user:pw@prices.example/btc"), parse()), f"{ROOT}.tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(http("https://no-such-host.invalid/btc"), parse()), f"{ROOT}.tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(http(headers=["X-Api-Key: k"]), parse()), f"{ROOT}.tasks[0].httpTask.headers", None),
    (definition(http(headers={"Host": "internal"}), parse()), f"{ROOT}.tasks[0].httpTask.headers.Host", None),
    (definition(http(headers={"X-Forwarded-For": "10.0.0.1"}), parse()), f"{ROOT}.tasks[0].httpTask.headers.X-Forwarded-For", None),
    (definition(http(headers={"X-Api-Key": "k\r\nX-Other: 1"}), parse()), f"{ROOT}.tasks[0].httpTask.headers.X-Api-Key", None),
    (definition(http(headers={"X-Api-Key": 7}), parse()), f"{ROOT}.tasks[0].httpTask.headers.X-Api-Key", None),
    (definition(http(headers={"X-A": "1", "x-a": "2"}), parse()), f"{ROOT}.tasks[0].httpTask.headers.x-a", None),
    (definition(http(headers={"Bad Name": "1"}), parse()), f"{ROOT}.tasks[0].httpTask.headers", None),
    (definition(http(headers={f"X-{i}": "1" for i in range(17)}), parse()), f"{ROOT}.tasks[0].httpTask.headers", None),
    (definition(http()), f"{ROOT}.tasks[0]", None),
    (definition(parse()), f"{ROOT}.tasks[0].jsonParseTask", None),
    (definition(value("1"), parse()), f"{ROOT}.tasks[1].jsonParseTask", None),
    (definition(http(), parse("$..price")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("price")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("$.data[*].price")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("$.data[0:2]")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("$[?(@.p > 1)]")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("$['unclosed")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse("$.usd-coin")), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), {"jsonParseTask": {"path": 3}}), f"{ROOT}.tasks[1].jsonParseTask.path", None),
    (definition(http(), parse(), http(), parse()), f"{ROOT}.tasks[2].httpTask", None),
    (definition(value("1"), value("2")), f"{ROOT}.tasks[1].valueTask", None),
    (definition({"valueTask": {"value": "abc"}}), f"{ROOT}.tasks[0].valueTask.value", None),
    (definition({"valueTask": {"value": "NaN"}}), f"{ROOT}.tasks[0].valueTask.value", None),
    (definition({"valueTask": {"value": "Infinity"}}), f"{ROOT}.tasks[0].valueTask.value", None),
    (definition({"valueTask": {"value": True}}), f"{ROOT}.tasks[0].valueTask.value", None),
    (definition({"valueTask": {}}), f"{ROOT}.tasks[0].valueTask.value", None),
    (definition({"multiplyTask": {"scalar": "2"}}), f"{ROOT}.tasks[0].multiplyTask", None),
    (definition(value("1"), {"multiplyTask": {"scalar": "2", "job": {"tasks": [value("2")]}}}), f"{ROOT}.tasks[1].multiplyTask", None),
    (definition(value("1"), {"multiplyTask": {}}), f"{ROOT}.tasks[1].multiplyTask", None),
    (definition(value("1"), {"multiplyTask": {"scalar": "1,5"}}), f"{ROOT}.tasks[1].multiplyTask.scalar", None),
    (definition(value("1"), {"divideTask": {"scalar": "0.000"}}), f"{ROOT}.tasks[1].divideTask.scalar", None),
    (definition(value("1"), {"divideTask": {"job": {"tasks": [http("https://10.0.0.8/fx"), parse()]}}}),
     f"{ROOT}.tasks[1].divideTask.job.tasks[0].httpTask.url", "URL_NOT_ALLOWED"),
    (definition(value("1"), {"divideTask": {"job": {"tasks": []}}}), f"{ROOT}.tasks[1].divideTask.job.tasks", None),
    (definition(value("1"), median(source())), f"{ROOT}.tasks[1].medianTask", None),
    (definition(median()), f"{ROOT}.tasks[0].medianTask.jobs", None),
    (definition({"medianTask": {}}), f"{ROOT}.tasks[0].medianTask.jobs", None),
    (definition(median(source(), source(), minSuccessfulRequired=3)), f"{ROOT}.tasks[0].medianTask.minSuccessfulRequired", None),
    (definition(median(source(), minSuccessfulRequired=0)), f"{ROOT}.tasks[0].medianTask.minSuccessfulRequired", None),
    (definition(median(source(), minSuccessfulRequired="1")), f"{ROOT}.tasks[0].medianTask.minSuccessfulRequired", None),
    (definition(median(source(), maxRangePercent="-1")), f"{ROOT}.tasks[0].medianTask.maxRangePercent", None),
    (definition({"meanTask": {"jobs": [source()], "minSuccessful": 1}}), f"{ROOT}.tasks[0].meanTask.minSuccessful", None),
    (definition({"meanTask": {"jobs": [source(), {"tasks": [http()]}]}}), f"{ROOT}.tasks[0].meanTask.jobs[1].tasks[0]", None),
    (definition(median(*[{"tasks": [value("1")]}] * 17)), f"{ROOT}.tasks[0].medianTask.jobs", None),
    (json.dumps(_deep(3)), f"{ROOT}.tasks[0].medianTask.jobs[0].tasks[0].medianTask.jobs[0].tasks[0].medianTask.jobs[0]", None),
    (definition(*_tasks(17)), f"{ROOT}.tasks", None),
    (definition(median(*[{"tasks": _tasks(4)}] * 16)), f"{ROOT}.tasks[0].medianTask.jobs[15].tasks[3]", None),
    (definition(median(*[source()] * 16), {"multiplyTask": {"job": source()}}), f"{ROOT}.tasks[1].multiplyTask.job.tasks[0].httpTask", None),
]


@pytest.mark.parametrize(("text", "path", "code"), INVALID)
def test_an_invalid_definition_is_refused_naming_the_bad_part(settings, text, path, code):
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(JobDefinitionError) as refused:
        parse_job(text)
    error = refused.value
    assert error.path == path, (error.path, error.message)
    assert error.code == (code or "INVALID_JOB_DEFINITION")
    assert isinstance(error, LedgerError) and error.status_code == 400
    assert error.as_errors() == [{"code": error.code, "message": error.message, "field": path}]
    assert error.message and "\r\n" not in error.message


def test_header_values_never_appear_in_an_error():
    secret = "sk-live-never-echoed-77"
    for headers in ({"X-Api-Key": secret + "\n"}, {"X-Api-Key": secret * 100}, {"X-Api-Key": secret, "Connection": secret}):
        with pytest.raises(JobDefinitionError) as refused:
            parse_job(definition(http(headers=headers), parse()))
        assert secret not in refused.value.message


def test_the_root_names_the_request_field():
    with pytest.raises(JobDefinitionError) as refused:
        parse_job(definition(median(source(), {"tasks": "x"})), root="itemData.partnerOracleDetails.jobDefinition")
    assert refused.value.path == "itemData.partnerOracleDetails.jobDefinition.tasks[0].medianTask.jobs[1].tasks"
    with pytest.raises(JobDefinitionError) as refused:
        parse_job(None, root="itemData.partnerOracleDetails.jobDefinition")
    assert refused.value.path == "itemData.partnerOracleDetails.jobDefinition"


def test_a_definition_at_the_limits_is_accepted():
    job = parse_job(definition(median(*[{"tasks": _tasks(4)}] * 15, {"tasks": _tasks(3)})))
    assert len(job.tasks[0].jobs) == 16
    assert len(parse_job(definition(*_tasks(16))).tasks) == 16
    assert len(parse_job(definition(median(*[source()] * 16))).sources()) == 16
    assert parse_job(json.dumps(_deep(2))).tasks[0].jobs[0].tasks[0].jobs[0].depth == 3


def test_urls_are_checked_only_when_asked():
    """Stored definitions are loaded without DNS; evaluation checks every URL before calling."""
    text = definition(http("https://10.0.0.8/price"), parse())
    assert parse_job(text, check_urls=False).sources()[0].url == "https://10.0.0.8/price"
    with pytest.raises(JobDefinitionError):
        parse_job(text)


def test_the_hash_is_of_the_canonical_json():
    one = '{"tasks": [{"valueTask": {"value": "1.50"}}, {"multiplyTask": {"scalar": 2.0}}]}'
    same = '{"tasks":[{"valueTask":{"value":"1.50"}},\n {"multiplyTask":{"scalar":2.0}}]}'
    reordered = '{"tasks": [{"valueTask": {"value": "1.50"}}, {"multiplyTask": {"scalar": 2.0}}], "x": 1}'
    assert len(job_hash(one)) == 32 and job_hash(one) == job_hash(same)
    assert job_hash('{"a": 1, "b": [true, null, "é"]}') == job_hash('{"b":[true,null,"\\u00e9"],"a":1}')
    for other in ('{"tasks": [{"valueTask": {"value": "1.5"}}, {"multiplyTask": {"scalar": 2.0}}]}',
                  '{"tasks": [{"valueTask": {"value": "1.50"}}, {"multiplyTask": {"scalar": 2}}]}', reordered):
        assert job_hash(other) != job_hash(one)
    with pytest.raises(JobDefinitionError):
        job_hash("{")
