"""Run schemathesis (every check) over the whole OpenAPI against a live, throwaway server.

Against a throwaway var dir (SQLite, filesystem broker, its own master key): migrate,
start a local SVM node, a Celery worker (with beat: the durable-nonce pool, expiry) and the
API under gunicorn on free 127.0.0.1 ports, create a tenant and an API key, seed the tenant
with records through the API (scripts/schemathesis_seed.py), run ``schemathesis run
--checks all`` with a bounded number of examples per operation, deterministically, with
the hooks feeding the seeded records into generated lookups (scripts/schemathesis_hooks.py),
then stop everything. The exit code is schemathesis's: non-zero on any failure. Only
127.0.0.1 is ever contacted.

The key holds the roles the operations under test need for its own organization:
PLATFORM_UPDATE_DEBIT_API_KEYS (debit-key fields of Create/Update Account, and the seeded
funder's networkCurrencyDebitApiKeys naming this key) and PLATFORM_SENSITIVE_DATA_ACCESS
(Fetch Account Private Key). Not PLATFORM_CROSS_TENANT_ACCESS: the hooks name the run's own
organization in tenancyConfig overrides (which needs no role), and a generated name of
another organization is refused 403 MISSING_ROLE, as it should be.

    .venv/bin/python scripts/schemathesis_run.py [extra schemathesis options]

SCHEMATHESIS_MAX_EXAMPLES (default 25) bounds the examples per operation of the fuzzing phase
(the coverage phase, positive cases only: scripts/schemathesis.toml, is as large as the schema);
SCHEMATHESIS_KEEP=1 keeps the var dir (server and node logs, the schemathesis report);
SCHEMATHESIS_REPORT_DIR writes the reports there instead: junit.xml (one testcase per
operation) and run.json (schemathesis's JSON run report: test case counts, warnings), which
.ci/run's summary reads (scripts/ci_summary.py).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.schemathesis_seed import platform_addresses, seed  # noqa: E402
from localnet.testing import LocalnetProcess, free_port  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"))
TENANT = "SCHEMATHESIS"
KEY_NAME = "schemathesis"
KEY_ROLES = "PLATFORM_UPDATE_DEBIT_API_KEYS,PLATFORM_SENSITIVE_DATA_ACCESS"


def manage(env: dict, *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as resp:
                if resp.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the API did not answer on {url} within {timeout}s")


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, 15)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait(10)


#: schemathesis's closing line, pytest's style: "==== 3 warnings in 434.75s ====" (ANSI colours aside)
_DECORATED = re.compile(r"^(?:\x1b\[[0-9;]*m)*=+ (.*?) =+(?:\x1b\[[0-9;]*m)*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def undecorated(line: str) -> str:
    """A closing line in pytest's "=== … in Ns ===" style, said plainly: the CI harness reads
    such a line as a pytest run's result (one that ran no test, for "3 warnings in 434.75s")."""
    match = _DECORATED.match(line.rstrip("\n"))
    if match and re.search(r"\bin [0-9.]+s\b", match.group(1)):
        return f"schemathesis finished: {_ANSI.sub('', match.group(1))}\n"
    return line


def relay(command: list[str], *, cwd: Path, env: dict) -> int:
    """Run schemathesis, passing its output on line by line (closing lines undecorated)."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1) as proc:
        for line in proc.stdout:
            sys.stdout.write(undecorated(line))
            sys.stdout.flush()
        return proc.wait()


def closing_lines(code: int, reports: Path, tally_file: Path) -> list[str]:
    """What the run reached, then its own count as the last line, "schemathesis: N passed,
    N failed" (operations, from its JUnit report; a run that failed without attributing it
    to an operation counts one failed)."""
    from scripts.ci_summary import ReportError, schemathesis_report

    lines = []
    try:
        tally = json.loads(tally_file.read_text())
        share = 100.0 * tally["reached"] / tally["cases"] if tally["cases"] else 0.0
        lines.append(f"== x-request-id: {tally['reached']} of {tally['cases']} cases ({share:.1f} %) reached the operations' logic "
                     f"({tally['requestIdReused']} answered 409 REQUEST_ID_REUSED, {tally['replayed']} replayed a stored answer)")
    except (OSError, ValueError, KeyError):
        lines.append("== x-request-id: no tally (the hooks wrote none)")
    try:
        report = schemathesis_report(reports)
        counts = report.operations
        if code and not counts.failed:
            counts.failed += 1
        lines.append(f"== {counts.passed + counts.failed + counts.skipped} operations; {report.cases}")
        lines.append(f"schemathesis: {counts.text()}")
    except ReportError as exc:
        lines.append(f"schemathesis: 0 passed, 1 failed ({exc}; exited {code})" if code else f"schemathesis: 0 passed, 1 failed ({exc})")
    return lines


def main(extra: list[str]) -> int:
    var = Path(tempfile.mkdtemp(prefix="ledger-schemathesis-"))
    node = server = worker = None
    try:
        node = LocalnetProcess(var / "localnet", log_path=var / "localnet.log").start()
        port = free_port()
        env = {
            key: value for key, value in os.environ.items()
            if key not in ("DATABASE_URL", "REDIS_URL", "LEDGER_CLUSTERS")
        }
        env.update({
            "LEDGER_VAR_DIR": str(var),
            "LEDGER_LOCALNET_RPC_URL": node.url,
            "LEDGER_MASTER_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "DJANGO_SECRET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            # ?wait= answers with the current status quickly (the worker confirms meanwhile).
            "LEDGER_WAIT_TIMEOUT_SECONDS": "0.5",
            # schemathesis sends many requests from one key.
            "LEDGER_RATE_LIMIT_PER_MINUTE": "1000000",
            # Many DURABLE_NONCE requests in a row, each with a fresh x-request-id (so each one
            # leases): a pool deeper than the tenant's lease quota (16), so leases held until
            # their transactions finalize never empty it (503 NONCE_POOL_EMPTY); past the quota
            # a request is answered 429.
            "LEDGER_NONCE_POOL_TARGET": "48",
            "LEDGER_NONCE_POOL_LOW_WATER": "24",
            "LEDGER_NONCE_POOL_MAX": "96",
            "GUNICORN_WORKERS": "2",
            "LOG_LEVEL": "WARNING",
            # Generated webhook endpoints are random public addresses: events are recorded,
            # never sent (docs/webhooks.md).
            "LEDGER_WEBHOOK_DELIVERY_ENABLED": "false",
        })
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "create_tenant", "--external-id", TENANT, "--name", "schemathesis")
        key = json.loads(manage(env, "create_api_key", "--org", TENANT, "--name", KEY_NAME, "--roles", KEY_ROLES))
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(var / "celerybeat-schedule"),
             "--pool", "threads", "--concurrency", "2", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
            cwd=ROOT, env=env, stdout=open(var / "worker.log", "ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        log = open(var / "gunicorn.log", "ab")
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, server)
        reports = Path(os.environ.get("SCHEMATHESIS_REPORT_DIR") or var / "report").resolve()
        reports.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        records = seed(url=url, secret=key["secret"], key_name=KEY_NAME, node_url=node.url)
        seed_file = var / "seed.json"
        # The key's secret too (Issue Access Token's client credentials): a throwaway key of a
        # throwaway server, in its throwaway var dir.
        platform = platform_addresses(url=url, secret=key["secret"], records=records)
        # The platform's nonce pool full before the first case (the worker fills it in the
        # background, behind its other tasks): with the tenant's lease quota below the pool's
        # size, a DURABLE_NONCE case then meets 429 at worst, never 503 NONCE_POOL_EMPTY.
        manage(env, "shell", "-c", "from transactions.nonce_pool import nonce_pool_fill; nonce_pool_fill(cluster='CHAIN_LOCALNET')")
        seed_file.write_text(json.dumps({"organization": TENANT, "apiKey": {"keyId": key["keyId"], "secret": key["secret"]}, "records": records, "platform": platform}, indent=2))
        print(f"== seeded {', '.join(records)} in {time.monotonic() - started:.1f}s", flush=True)
        command = [
            str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(ROOT / "scripts" / "schemathesis.toml"),
            "run", f"{url}/api/schema/?format=json",
            "--url", url,
            "--checks", "all",
            "--header", f"Authorization: Bearer {key['secret']}",
            "--max-examples", str(MAX_EXAMPLES),
            "--generation-deterministic",
            "--workers", "1",
            "--request-timeout", "30",
            "--report", "junit,json",
            "--report-junit-path", str(reports / "junit.xml"),
            "--report-json-path", str(reports / "run.json"),
            *extra,
        ]
        print(f"== schemathesis against {url} (max {MAX_EXAMPLES} examples per operation, deterministic)", flush=True)
        tally_file = var / "request-ids.json"
        hooks_env = {**os.environ, "SCHEMATHESIS_HOOKS": "scripts.schemathesis_hooks", "SCHEMATHESIS_SEED_FILE": str(seed_file),
                     "SCHEMATHESIS_TALLY_FILE": str(tally_file), "PYTHONPATH": str(ROOT)}
        code = relay(command, cwd=var, env=hooks_env)
        for line in closing_lines(code, reports, tally_file):
            print(line, flush=True)
        return code
    finally:
        stop(server)
        stop(worker)
        if node is not None:
            node.stop()
        if os.environ.get("SCHEMATHESIS_KEEP") == "1":
            print(f"kept {var}")
        else:
            shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
