"""The alert rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
(deploy/grafana/ledger.json) load, and every metric they name is served by GET /metrics
(docs/operations.md, "Alerts"). With promtool (Debian's ``prometheus``, installed by `make
promtool` like chromium for the browser tests), the rules and every dashboard query are
also checked by Prometheus' own parser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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


@pytest.fixture
def served(client, db):
    """Every family /metrics serves once the worker and beat have been seen and a balance
    sampled (before that, those gauges are absent: the alerts say so)."""
    from backoffice.heartbeat import heartbeat_stamp
    from backoffice.models import BalanceSample

    heartbeat_stamp("worker")
    heartbeat_stamp("beat")
    for account in ("fee_payer", "nonce_pool"):
        BalanceSample.objects.create(cluster="CHAIN_LOCALNET", account=account, lamports=10**9, at=timezone.now())
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


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool missing: `make promtool` installs Debian's prometheus")
def test_promtool_accepts_the_rules_and_every_dashboard_query(tmp_path):
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The dashboard's queries as recording rules: promtool parses each with Prometheus' parser.
    records = [{"record": f"ledger_dashboard:q{i}", "expr": expr} for i, expr in enumerate(dashboard_expressions().values())]
    queries = tmp_path / "dashboard.yml"
    queries.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    checked = subprocess.run(["promtool", "check", "rules", str(queries)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
