"""The alert rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
(deploy/grafana/ledger.json) load, and every metric they name is served by GET /metrics
(docs/operations.md, "Alerts"). With Debian's ``prometheus`` (installed by `make promtool`
like chromium for the browser tests), promtool checks the rules and every dashboard query
with Prometheus' own parser, and a stock Prometheus scrapes a live server, loads the rules
and answers every dashboard query."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from tests.metricskit import families, scrape

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "ledger.json"
_NAME = re.compile(r"\b(ledger_[a-z0-9_]+)\b")


def rule_expressions() -> dict[str, str]:
    doc = yaml.safe_load(RULES.read_text())
    return {rule["alert"]: rule["expr"] for group in doc["groups"] for rule in group["rules"]}


def dashboard_expressions() -> dict[str, str]:
    doc = json.loads(DASHBOARD.read_text())
    return {f"{panel['title']} {target['refId']}": target["expr"] for panel in doc["panels"] for target in panel["targets"]}


def _seen_once() -> None:
    """The worker and beat seen, a balance sampled: before that those gauges are absent
    (and the alerts say so)."""
    from backoffice.heartbeat import heartbeat_stamp
    from backoffice.models import BalanceSample

    heartbeat_stamp("worker")
    heartbeat_stamp("beat")
    for account in ("fee_payer", "nonce_pool"):
        BalanceSample.objects.create(cluster="CHAIN_LOCALNET", account=account, lamports=10**9, at=timezone.now())


@pytest.fixture
def served(client, db):
    """Every family /metrics serves once the worker and beat have been seen and a balance
    sampled."""
    _seen_once()
    client.get("/healthz")  # a request, so the request families have a series
    return families(scrape(client))


def test_rules_and_dashboard_parse_and_cover_what_the_issue_asks():
    rules = rule_expressions()
    assert {"LedgerFeePayerLow", "LedgerConfirmationSlow", "LedgerPumpBacklogGrowing", "LedgerRpcErrors", "LedgerWebhookDeadLetters",
            "LedgerWorkerMissing", "LedgerBeatMissing", "LedgerFeedsStale"} <= set(rules)
    doc = yaml.safe_load(RULES.read_text())
    assert all({"alert", "expr", "for", "labels", "annotations"} <= set(rule) for group in doc["groups"] for rule in group["rules"])
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] and board["panels"] and dashboard_expressions()


@pytest.mark.django_db
def test_every_metric_the_rules_and_the_dashboard_name_is_served(served):
    named = {name: where for where, expr in {**rule_expressions(), **dashboard_expressions()}.items() for name in _NAME.findall(expr)}
    missing = {name: where for name, where in named.items() if name not in served}
    assert not missing, f"named but not on /metrics: {missing}"


def test_promtool_accepts_the_rules_and_every_dashboard_query(tmp_path):
    assert shutil.which("promtool"), "promtool missing: `make promtool` (run by make test) installs Debian's prometheus"
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The alerts fire on the figures they are about, and stay quiet on paused webhook events.
    tested = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], capture_output=True, text=True, cwd=RULES.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # The dashboard's queries as recording rules: promtool parses each with Prometheus' parser.
    records = [{"record": f"ledger_dashboard:q{i}", "expr": expr} for i, expr in enumerate(dashboard_expressions().values())]
    queries = tmp_path / "dashboard.yml"
    queries.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    checked = subprocess.run(["promtool", "check", "rules", str(queries)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _prometheus_api(port: int, path: str, **query) -> dict:
    url = f"http://127.0.0.1:{port}/api/v1/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


@pytest.mark.django_db(transaction=True)
def test_a_stock_prometheus_scrapes_the_service_and_loads_the_rules_and_the_dashboard(live_server, tmp_path):
    """What an operator does: a stock Prometheus scraping /metrics (loopback: no token in
    embedded mode) with alerts.yml loaded; every rule is healthy, every dashboard query
    runs, and every metric named has a series."""
    assert shutil.which("prometheus"), "prometheus missing: `make promtool` (run by make test) installs Debian's prometheus"
    from localnet.testing import free_port

    _seen_once()
    port = free_port()
    target = live_server.url.split("//", 1)[1]
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(RULES)],
                                      "scrape_configs": [{"job_name": "ledger", "static_configs": [{"targets": [target]}]}]}))
    server = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                targets = _prometheus_api(port, "targets")["data"]["activeTargets"]
                rules = [r for g in _prometheus_api(port, "rules")["data"]["groups"] for r in g["rules"]]
                if targets and targets[0]["health"] == "up" and rules and all(r.get("lastEvaluation", "").startswith("2") and not r["lastEvaluation"].startswith("0001") for r in rules):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus did not scrape the service and evaluate the rules within 60 s"
            time.sleep(0.5)
        assert {r["name"] for r in rules} == set(rule_expressions())
        assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        for where, expr in dashboard_expressions().items():
            assert _prometheus_api(port, "query", query=expr)["status"] == "success", where
        named = {name for expr in {**rule_expressions(), **dashboard_expressions()}.values() for name in _NAME.findall(expr)}
        missing = [name for name in sorted(named) if not _prometheus_api(port, "query", query=f"count({{__name__={name!r}}})".replace("'", '"'))["data"]["result"]]
        assert not missing, f"no series in Prometheus for {missing}"
    finally:
        server.terminate()
        server.wait(timeout=30)
