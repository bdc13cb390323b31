"""Evaluating jobs against real HTTP sources on this machine (docs/marketdata.md,
"Evaluation"): the servers are the webhook tests' kit (webhooks/tests/webhookkit.py)."""

from __future__ import annotations

import json
import logging
import time
from decimal import Decimal

import pytest

from marketdata.jobs import JobDefinitionError, evaluate, parse_job
from marketdata.jobs.evaluate import GRACE_SECONDS
from marketdata.tests.jobkit import definition, mean, median, source, value
from webhooks.tests.webhookkit import JsonSource

SECRET = "sk-live-never-recorded-5d1e"


@pytest.fixture(autouse=True)
def development_process(settings):
    """A development process (`make run`, the tests' workers): http to this machine allowed."""
    settings.LEDGER_EMBEDDED = True
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def serve():
    """serve(**JsonSource options) -> a started source, stopped after the test."""
    started = []

    def start(**options) -> JsonSource:
        server = JsonSource(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def run(*tasks, timeout: float = 5.0):
    evaluation = evaluate(parse_job(definition(*tasks)), timeout_seconds=timeout)
    json.dumps(evaluation.to_record())  # always storable
    return evaluation


def test_the_median_of_two_sources(serve, caplog):
    caplog.set_level(logging.DEBUG)
    a = serve(body=b'{"result": {"price": "100.5"}}')
    b = serve(body=b'{"data": [{"last-trade": {"px": 101.5}}]}')
    job = {"tasks": [{"httpTask": {"url": b.url("/btc?q=1"), "headers": {"X-Api-Key": SECRET, "User-Agent": "tenant-agent"}}},
                     {"jsonParseTask": {"path": "$.data[0]['last-trade'].px"}}]}
    evaluation = run(median(source(a.url("/ticker"), "$.result.price"), job))
    assert evaluation.ok and evaluation.result == Decimal("101") and isinstance(evaluation.result, Decimal) and evaluation.errors == []
    first, second = evaluation.sources
    assert first.path == "jobDefinition.tasks[0].medianTask.jobs[0].tasks[0].httpTask" and first.url == a.url("/ticker")
    assert (first.status_code, first.value, first.error) == (200, Decimal("100.5"), "") and first.excerpt == '{"result": {"price": "100.5"}}'
    assert (second.status_code, second.value) == (200, Decimal("101.5")) and isinstance(second.value, Decimal)
    assert all(isinstance(s.elapsed_ms, int) and 0 <= s.elapsed_ms <= evaluation.elapsed_ms for s in evaluation.sources)
    (path_a, headers_a), = a.requests
    (path_b, headers_b), = b.requests
    assert path_a == "/ticker" and path_b == "/btc?q=1"
    assert headers_a["accept"] == "application/json" and headers_a["accept-encoding"] == "identity" and headers_a["user-agent"] == "ledger-marketdata/1"
    assert headers_b["x-api-key"] == SECRET and headers_b["user-agent"] == "tenant-agent"
    record = evaluation.to_record()
    assert record["ok"] is True and record["result"] == "101.0" and record["startedAt"].endswith("Z")
    assert record["sources"][1]["value"] == "101.5" and record["sources"][0]["statusCode"] == 200
    assert SECRET not in json.dumps(record) and SECRET not in caplog.text


def test_a_source_down_is_tolerated_up_to_min_successful_required(serve):
    a, b, down = serve(document={"price": 10}), serve(document={"price": 12}), serve(document={"price": 11})
    down.stop()  # its port refuses connections: a host that is down
    jobs = [source(a.url()), source(down.url()), source(b.url())]
    tolerated = run(median(*jobs, minSuccessfulRequired=2))
    assert tolerated.ok and tolerated.result == 11
    assert [s.error != "" for s in tolerated.sources] == [False, True, False] and "ConnectError" in tolerated.sources[1].error
    assert tolerated.sources[1].status_code is None and tolerated.sources[1].value is None
    assert len(tolerated.errors) == 1 and tolerated.errors[0].startswith("jobDefinition.tasks[0].medianTask.jobs[1].tasks[0].httpTask: ConnectError")

    required = run(median(*jobs, minSuccessfulRequired=3))
    assert not required.ok and required.result is None and required.to_record()["result"] is None
    assert required.errors[-1] == "jobDefinition.tasks[0].medianTask: 2 of 3 jobs gave a usable value; minSuccessfulRequired is 3"

    by_default = run(mean(*jobs))  # every job required
    assert not by_default.ok and "minSuccessfulRequired is 3" in by_default.errors[-1]


def test_an_outlier_beyond_max_range_percent_is_dropped(serve):
    low, high, outlier = serve(document={"price": "100"}), serve(document={"price": "101"}), serve(document={"price": "150"})
    jobs = [source(low.url()), source(high.url()), source(outlier.url())]
    evaluation = run(median(*jobs, maxRangePercent="5", minSuccessfulRequired=2))
    assert evaluation.ok and evaluation.result == Decimal("100.5")  # the median of 100 and 101; 150 is 48.51% from 101
    assert evaluation.errors == ["jobDefinition.tasks[0].medianTask.jobs[2]: dropped as an outlier: 150 is 48.51% away from the median 101 (maxRangePercent 5)"]
    assert evaluation.sources[2].value == 150 and evaluation.sources[2].error == ""  # the source answered; the job's value was dropped

    assert run(mean(*jobs, maxRangePercent="5", minSuccessfulRequired=2)).result == Decimal("100.5")
    assert run(mean(*jobs, maxRangePercent="50")).result == Decimal("117")  # nothing dropped: (100 + 101 + 150) / 3
    too_few = run(median(*jobs, maxRangePercent="5"))  # all three required
    assert not too_few.ok and too_few.errors[-1].endswith("2 of 3 jobs gave a usable value; minSuccessfulRequired is 3")
    apart = run(median(source(low.url()), source(outlier.url()), maxRangePercent="10", minSuccessfulRequired=1))
    assert not apart.ok and len(apart.errors) == 3  # two sources far apart: both 20% from their midpoint, both dropped (documented)


def test_a_zero_median_makes_every_other_value_an_outlier():
    evaluation = run(median({"tasks": [value("0")]}, {"tasks": [value("0")]}, {"tasks": [value("0.001")]}, maxRangePercent="1000", minSuccessfulRequired=2))
    assert evaluation.ok and evaluation.result == 0 and "0.001 is infinitely away from the median 0" in evaluation.errors[0]


def test_a_slow_source_is_bounded_by_the_timeout(serve):
    fast, slow = serve(document={"price": 7}), serve(document={"price": 9}, delay=4)
    begun = time.monotonic()
    evaluation = run(median(source(fast.url()), source(slow.url()), minSuccessfulRequired=1), timeout=1)
    took = time.monotonic() - begun
    assert evaluation.ok and evaluation.result == 7
    assert 1 <= took < 1 + 3 * GRACE_SECONDS + 0.5, took
    assert evaluation.sources[1].error == "no answer within the evaluation's time limit (1 s)" and evaluation.sources[1].status_code is None
    assert evaluation.errors == ["jobDefinition.tasks[0].medianTask.jobs[1].tasks[0].httpTask: no answer within the evaluation's time limit (1 s)"]

    begun = time.monotonic()
    alone = run(*source(slow.url())["tasks"], timeout=0.5)
    assert not alone.ok and time.monotonic() - begun < 0.5 + 3 * GRACE_SECONDS + 0.5
    assert alone.sources[0].error == "no answer within the evaluation's time limit (0.5 s)"


def test_an_answer_dripping_past_the_deadline_is_cut(serve):
    """httpx's timeout bounds each read; a source sending a byte every 0.1 s never trips it.
    The deadline closes the connection: the source sees the caller hang up."""
    from ledger_project.outbound import outbound_client

    drip = serve(body=b'{"price": 1}' + b" " * 100, drip=0.1)
    with outbound_client() as pooled:  # a worker's client, which outlives the evaluation: closing it does not end the call
        begun = time.monotonic()
        evaluation = evaluate(parse_job(definition(*source(drip.url())["tasks"])), timeout_seconds=1, client=pooled)
        assert not evaluation.ok and time.monotonic() - begun < 1 + 3 * GRACE_SECONDS + 0.5
        assert "time limit" in evaluation.sources[0].error
        assert drip.cut.wait(3)  # hung up on long before the 11 s the body would take


@pytest.mark.parametrize(("options", "path", "error"), [
    ({"document": {"price": 1}}, "$.prize", "no value at $.prize: $ has no member 'prize'"),
    ({"document": {"price": [1, 2]}}, "$.price[2]", "no value at $.price[2]: $.price has 2 elements: no [2]"),
    ({"document": {"price": "n/a"}}, "$.price", "the value at $.price is not a number: not a decimal string: 'n/a'"),
    ({"document": {"price": {"usd": 1}}}, "$.price", "the value at $.price is not a number: found an object, not a number"),
    ({"document": {"price": True}}, "$.price", "the value at $.price is not a number: found true, not a number"),
    ({"document": {"price": None}}, "$.price", "the value at $.price is not a number: found null, not a number"),
    ({"body": b'{"price": NaN}'}, "$.price", "the value at $.price is not a number: not a finite number"),
    ({"body": b"<html>busy</html>"}, "$.price", "the answer is not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0))"),
    ({"document": {"price": 1}, "status": 503}, "$.price", "the source answered HTTP 503"),
    ({"document": {"price": 1}, "status": 302, "extra_headers": {"Location": "http://169.254.169.254/"}}, "$.price",
     "the source answered HTTP 302 (redirects are not followed)"),
    ({"body": b'{"price": 1, "pad": "' + b"x" * 300_000 + b'"}'}, "$.price", "the answer is longer than 262144 bytes"),
])
def test_what_a_source_answers_wrong_is_recorded(serve, options, path, error):
    server = serve(**options)
    evaluation = run(*source(server.url("/p"), path)["tasks"])
    assert not evaluation.ok and evaluation.result is None
    (record,) = evaluation.sources
    assert record.error == error and record.value is None and record.status_code == options.get("status", 200)
    assert record.excerpt == server.body[:500].decode()
    step = "jsonParseTask" if error.startswith(("no value", "the value")) else "httpTask"
    assert evaluation.errors == [f"jobDefinition.tasks[{1 if step == 'jsonParseTask' else 0}].{step}: {error}"]
    assert len(server.requests) == 1  # a redirect is not followed


def test_arithmetic_with_constants_and_other_jobs(serve):
    btc, fx, zero = serve(document={"bid_cents": 2712345}), serve(document={"rates": {"USD": "1.25"}}), serve(document={"v": "0.0"})
    evaluation = run(*source(btc.url(), "$.bid_cents")["tasks"], {"divideTask": {"scalar": "100"}},
                     {"divideTask": {"job": source(fx.url(), "$.rates.USD")}}, {"multiplyTask": {"scalar": "2"}})
    assert evaluation.ok and evaluation.result == Decimal("43397.52") and len(evaluation.sources) == 2
    by_zero = run(value("1"), {"divideTask": {"job": source(zero.url(), "$.v")}})
    assert not by_zero.ok and by_zero.errors == ["jobDefinition.tasks[1].divideTask: division by zero (jobDefinition.tasks[1].divideTask.job yielded 0)"]
    huge = run(value("1e999990"), {"multiplyTask": {"scalar": "1e10"}})
    assert not huge.ok and "out of range (Overflow)" in huge.errors[0]
    assert run(value("1"), {"divideTask": {"scalar": "3"}}).result == Decimal("0.3333333333333333333333333333333333333333")


def test_urls_are_checked_again_at_every_call(serve, settings):
    """Saved in development; evaluated where this machine's addresses are refused (or the
    name now resolves to one): refused before any connection."""
    server = serve(document={"price": 1})
    job = parse_job(definition(*source(server.url())["tasks"]))
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    evaluation = evaluate(job, timeout_seconds=2)
    assert not evaluation.ok and evaluation.sources[0].error.startswith("URL_NOT_ALLOWED: The host '127.0.0.1' resolves to a loopback")
    assert server.requests == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:8899/", "https://127.0.0.1/", "https://10.0.0.8/price", "https://169.254.169.254/latest/meta-data",
                                 "https://[::1]/", "https://[::ffff:10.0.0.1]/", "https://100.64.0.1/"])
def test_a_private_address_is_refused_in_production(settings, url):
    settings.LEDGER_EMBEDDED, settings.DEBUG = False, False  # a production process: https only, whatever ALLOW_HTTP says
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(JobDefinitionError) as refused:
        parse_job(definition(median(source("https://prices.example/btc"), source(url))))
    assert refused.value.code == "URL_NOT_ALLOWED" and refused.value.path == "jobDefinition.tasks[0].medianTask.jobs[1].tasks[0].httpTask.url"
    assert parse_job(definition(*source("https://prices.example/btc")["tasks"])).sources()[0].url == "https://prices.example/btc"


def test_a_timeout_outside_its_bounds_is_a_caller_error():
    job = parse_job(definition(value("1")))
    for timeout in (0, -1, 121, True, "5"):
        with pytest.raises(ValueError):
            evaluate(job, timeout_seconds=timeout)
    assert evaluate(job, timeout_seconds=120).result == 1


@pytest.mark.django_db
def test_a_failed_evaluation_lists_its_errors_once(tenant):
    """The evaluation's error is its errors joined; the answer listed both, so the errors
    came back with a third entry repeating the first two."""
    from marketdata import refresh, render
    from marketdata.models import EvaluationStatus
    from marketdata.tests.factories import make_evaluation, make_source

    down = [f"http://127.0.0.1:{port}/price" for port in (9, 10)]  # nothing listens: refused
    job = definition(median(source(down[0]), source(down[1]), minSuccessfulRequired=2))
    outcome = refresh._evaluate_and_build(tenant, make_source(tenant, job_definition=job))
    assert outcome.status == EvaluationStatus.FAILED and outcome.error
    recorded = outcome.fields["record"]["errors"]
    assert len(recorded) >= 2
    shown = render.evaluation(make_evaluation(make_source(tenant), status=EvaluationStatus.FAILED, record=outcome.fields["record"], error=outcome.error), -8)
    assert shown["errors"] == recorded
    other = render.evaluation(make_evaluation(make_source(tenant), status=EvaluationStatus.REJECTED, record=outcome.fields["record"], error="The feed's authority differs."), -8)
    assert other["errors"] == [*recorded, "The feed's authority differs."]  # an error of its own is still shown
