"""Behind Debian's nginx (docs/configuration.md, "Behind a reverse proxy"): the client's
address is the one nginx saw, whatever the client writes in X-Forwarded-For.

gunicorn (gunicorn.conf.py) and nginx run here on free 127.0.0.1 ports, nginx with
``proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for`` (the sample config of the
docs) and the service with LEDGER_TRUSTED_PROXIES=127.0.0.1/32. Clients connect from other
loopback addresses (127.0.0.5, 127.0.0.6: all of 127.0.0.0/8 is local on Linux), so the
address nginx appends is theirs, and every forgery is theirs too:

- a forged ``X-Forwarded-For: 127.0.0.1`` (the one address allowed /metrics here) does not
  reach /metrics, through nginx or straight to gunicorn; nginx's own host does;
- wrong passwords from 127.0.0.5 forging 127.0.0.6 lock only (username, 127.0.0.5): the right
  password from 127.0.0.6 still signs in, the proxy's pair is never counted, and the audit
  writes each client's real address.

nginx runs without root's paths: its prefix, pid file, logs and temp files are in a temp
dir, in the foreground (``daemon off``). Both servers are started in their own process
groups and the groups are killed at the end, also when a test fails. Install nginx with
`make nginx` (`make test` does).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from localnet.testing import free_port
from tests.workers import ROOT, new_queue_name, service_env

LOGIN = "/admin/login/?next=/admin/"
PROXY = "127.0.0.1"  # nginx reaches gunicorn from here (proxy_bind)
CLIENT, OTHER = "127.0.0.5", "127.0.0.6"

NGINX_CONF = """\
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    upstream ledger {{ server 127.0.0.1:{upstream}; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://ledger;
            proxy_bind {proxy};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"""


def _nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not found:
        pytest.fail("nginx is not installed: `make nginx` installs Debian's")
    return found


def _listening(port: int, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: {log.read_text(errors='replace')[-3000:] if log.exists() else ''}")
            time.sleep(0.1)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's group (gunicorn's workers, nginx's worker), then SIGKILL."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.fixture(scope="module")
def stack(django_db_setup, tmp_path_factory):
    """(nginx's port, gunicorn's port), serving the test database."""
    nginx = _nginx()
    tmp = tmp_path_factory.mktemp("nginx")
    upstream, port = free_port(), free_port()
    env = service_env(new_queue_name(), {
        "LEDGER_TRUSTED_PROXIES": f"{PROXY}/32", "LEDGER_METRICS_ALLOWED_NETWORKS": f"{PROXY}/32", "LEDGER_METRICS_TOKEN": "",
        "LEDGER_ADMIN_LOCKOUT_FAILURES": "3", "LEDGER_ADMIN_LOCKOUT_SECONDS": "900",
        "GUNICORN_WORKERS": "1", "GUNICORN_THREADS": "2", "GUNICORN_GC_FREEZE": "0", "GUNICORN_CONTROL_SOCKET": str(tmp / "gunicorn.ctl"),
    })
    (tmp / "nginx.conf").write_text(NGINX_CONF.format(tmp=tmp, port=port, upstream=upstream, proxy=PROXY))
    started: list[subprocess.Popen] = []
    try:
        with open(tmp / "gunicorn.log", "wb") as log:
            started.append(subprocess.Popen([sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{upstream}",
                                             "--log-level", "warning"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        _listening(upstream, started[-1], tmp / "gunicorn.log", "gunicorn")
        with open(tmp / "nginx.out", "wb") as out:
            started.append(subprocess.Popen([nginx, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e", str(tmp / "error.log")],
                                            cwd=tmp, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        _listening(port, started[-1], tmp / "error.log", "nginx")
        yield port, upstream
    finally:
        for process in reversed(started):
            _stop(process)


def _exchange(port: int, source: str, method: str, path: str, headers: dict | None = None, body: bytes | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        answer.text = answer.read().decode(errors="replace")
        return answer
    finally:
        conn.close()


def _sign_in(port: int, source: str, username: str, password: str, forged: str | None = None) -> http.client.HTTPResponse:
    """The admin's sign-in form as a browser sends it (its CSRF cookie and token), from
    ``source``, with ``X-Forwarded-For: forged`` on both requests if given."""
    spoof = {"X-Forwarded-For": forged} if forged else {}
    page = _exchange(port, source, "GET", LOGIN, spoof)
    cookie = re.search(r"csrftoken=([^;]+)", page.getheader("Set-Cookie") or "").group(1)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token, "next": "/admin/"}).encode()
    return _exchange(port, source, "POST", LOGIN, {**spoof, "Cookie": f"csrftoken={cookie}", "Content-Type": "application/x-www-form-urlencoded"}, form)


def test_a_forged_forwarded_for_does_not_reach_metrics(stack):
    port, upstream = stack
    for forged in (PROXY, f"{PROXY}, {PROXY}", "unknown, 127.0.0.1"):
        assert _exchange(port, CLIENT, "GET", "/metrics", {"X-Forwarded-For": forged}).status == 401, forged
    assert _exchange(port, CLIENT, "GET", "/metrics").status == 401
    # Straight to gunicorn, past nginx: the peer is not a trusted proxy, its header is not read.
    assert _exchange(upstream, CLIENT, "GET", "/metrics", {"X-Forwarded-For": PROXY}).status == 401
    # nginx's own host is the allowed network, and is still let in through nginx.
    allowed = _exchange(port, PROXY, "GET", "/metrics")
    assert allowed.status == 200 and "ledger_http_requests_total" in allowed.text


@pytest.mark.django_db(transaction=True)
def test_forged_failures_lock_only_the_real_clients_pair_and_the_audit_names_it(stack):
    from backoffice.models import AuditKind, LoginFailure, StaffAuditEntry
    from backoffice.tests.staff import PASSWORD, staff_user

    port, _ = stack
    staff_user("viewer", "vera")
    for _ in range(3):
        wrong = _sign_in(port, CLIENT, "vera", "wrong", forged=OTHER)
        assert wrong.status == 200 and "Please enter the correct username and password" in wrong.text
    assert list(LoginFailure.objects.values_list("username", "ip_address", "failures_since_start")) == [("vera", CLIENT, 3)]

    locked = _sign_in(port, CLIENT, "vera", PASSWORD, forged=OTHER)
    assert locked.status == 200 and "Too many failed sign-ins" in locked.text
    # The address it forged, and the proxy every client comes through, are not locked.
    signed_in = _sign_in(port, OTHER, "vera", PASSWORD, forged=CLIENT)
    assert signed_in.status == 302 and signed_in.getheader("Location") == "/admin/", signed_in.text[:500]
    assert set(LoginFailure.objects.values_list("ip_address", flat=True)) == {CLIENT}

    audit = list(StaffAuditEntry.objects.order_by("pk").values_list("kind", "ip"))
    assert audit == [(AuditKind.LOGIN_FAILED, CLIENT), (AuditKind.LOGIN_FAILED, CLIENT), (AuditKind.LOCKED_OUT, CLIENT), (AuditKind.LOCKED_OUT, CLIENT),
                     (AuditKind.LOGIN, OTHER)]
