"""Plumbing the benchmarks share: management commands, the gunicorn server, a throwaway
PostgreSQL database, wrk, and the ORM page timing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent


def manage(env: dict, *args) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def gunicorn(env: dict, port: int) -> subprocess.Popen:
    """The API under gunicorn.conf.py on ``port``."""
    return subprocess.Popen([sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_processes(procs: list[subprocess.Popen], timeout: float = 15.0) -> None:
    """Terminate every process, then wait for each; one that outlives ``timeout`` is killed."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()


def server_url() -> str:
    base = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
    if not base.startswith("postgres"):
        raise SystemExit("bench_accounts needs PostgreSQL (DATABASE_URL=postgres://...)")
    return base


@contextlib.contextmanager
def throwaway_database():
    """A new, migrated database on DATABASE_URL's PostgreSQL server; yields its URL and
    drops it afterwards."""
    base = urlparse(server_url())
    name = f"ledger_bench_{uuid.uuid4().hex[:8]}"
    admin_url = base._replace(path="/postgres").geturl()
    db_url = base._replace(path=f"/{name}").geturl()
    subprocess.run(["psql", admin_url, "-q", "-c", f"CREATE DATABASE {name}"], check=True)
    try:
        yield db_url
    finally:
        subprocess.run(["psql", admin_url, "-q", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False)


def vacuum_analyze(db_url: str) -> None:
    # A bulk load leaves no planner statistics or visibility map; a live database has both (autovacuum).
    subprocess.run(["psql", db_url, "-q", "-c", "VACUUM ANALYZE"], check=True)


def orm_page_ms(env: dict, tenant: str, selector: str, item_query: dict, model: str) -> float:
    """p50 of ``selector`` ("module:function", e.g. accounts.selectors:account_list; it pages
    ``model``.objects.for_tenant(tenant), "app.Model") for one
    page, in a fresh process, without HTTP: the query and row conversion alone."""
    module, function = selector.split(":")
    code = f"""
import json, os, time
import django; django.setup()
from {module} import {function} as page
from django.apps import apps
from tenancy.models import TenantOrganization
from ledger_project.api.query import ItemQuerySerializer
tenant = TenantOrganization.objects.get(external_id="{tenant}")
s = ItemQuerySerializer(data=json.loads(os.environ["BENCH_QUERY"])); s.is_valid(raise_exception=True)
times = []
for _ in range(30):
    t = time.perf_counter(); page(queryset=apps.get_model("{model}").objects.for_tenant(tenant), cluster="CHAIN_LOCALNET", item_query=s.validated_data); times.append(time.perf_counter() - t)
times.sort()
print(times[len(times)//2] * 1000)
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "BENCH_QUERY": json.dumps(item_query)}, check=True, capture_output=True, text=True)
    return float(result.stdout.strip().splitlines()[-1])


def wrk_load(port: int, script: str, path: str, concurrency: int, duration: float) -> dict | None:
    """The same measurement with wrk (C; leaves the cores to the server). None without wrk.

    One wrk thread drives the 8 connections at these rates; a second one only competes with
    the server and the database for the two cores (p99 16-23 ms with -t2 against
    13-16 ms with -t1 in paired runs). BENCH_WRK_THREADS overrides it."""
    import shutil
    import tempfile

    if shutil.which("wrk") is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script)
    out = subprocess.run(["wrk", f"-t{os.environ.get('BENCH_WRK_THREADS', '1')}", f"-c{concurrency}", f"-d{int(duration)}s", "--latency", "-s", fh.name, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True).stdout
    os.unlink(fh.name)

    def ms(label):
        units = {"us": 0.001, "ms": 1.0, "s": 1000.0}
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[0] == label:
                value = parts[1]
                unit = next(u for u in ("us", "ms", "s") if value.endswith(u))
                return round(float(value[: -len(unit)]) * units[unit], 2)
        return None

    rps = next((float(line.split()[1]) for line in out.splitlines() if line.startswith("Requests/sec")), 0.0)
    non2xx = next((int(line.split()[-1]) for line in out.splitlines() if "Non-2xx" in line), 0)
    return {"load_generator": "wrk", "rps": round(rps, 1), "p50_ms": ms("50%"), "p99_ms": ms("99%"), "errors": non2xx}


