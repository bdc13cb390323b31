"""gunicorn refuses oversized request lines (414) and headers (431) before Django sees
them: the answer is the API's JSON error shape, not gunicorn's HTML page. Real sockets
against a gunicorn started here on a free 127.0.0.1 port with gunicorn.conf.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gunicorn_port():
    port = _free_port()
    env = {**os.environ, "GUNICORN_WORKERS": "1", "GUNICORN_THREADS": "1", "GUNICORN_GC_FREEZE": "0", "DJANGO_SETTINGS_MODULE": "ledger_project.settings"}
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--log-level", "error"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gunicorn did not start: {process.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(raw)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":  # gunicorn answers a chunked request in kind
        decoded = b""
        while True:
            size_line, _, body = body.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if not size:
                break
            decoded, body = decoded + body[:size], body[size + 2:]
        body = decoded
    return int(lines[0].split()[1]), headers, body


def _assert_json_error(status, headers, body, expected_status, code):
    assert status == expected_status, (status, body[:300])
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert set(payload) == {"errors", "requestId"} and payload["requestId"] == headers["x-request-id"]
    assert [e["code"] for e in payload["errors"]] == [code] and set(payload["errors"][0]) == {"code", "message", "field"}


def test_an_oversized_request_line_is_414_in_the_error_shape(gunicorn_port):
    raw = b"POST /api/v1/auth/whoami?svmCluster=" + b"A" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    _assert_json_error(*_exchange(gunicorn_port, raw), 414, "URI_TOO_LONG")


def test_an_oversized_header_is_431_in_the_error_shape(gunicorn_port):
    raw = b"POST /api/v1/auth/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + b"x" * 9000 + b"\r\nContent-Length: 0\r\n\r\n"
    _assert_json_error(*_exchange(gunicorn_port, raw), 431, "HEADERS_TOO_LARGE")


def test_too_many_headers_is_431_in_the_error_shape(gunicorn_port):
    many = b"".join(b"X-Filler-%d: 1\r\n" % i for i in range(150))
    raw = b"POST /api/v1/auth/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n" + many + b"Content-Length: 0\r\n\r\n"
    _assert_json_error(*_exchange(gunicorn_port, raw), 431, "HEADERS_TOO_LARGE")


def test_a_request_within_the_limits_reaches_the_api(gunicorn_port):
    raw = b"POST /api/v1/auth/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    _assert_json_error(*_exchange(gunicorn_port, raw), 401, "UNAUTHENTICATED")


def _chunked(path: bytes, body: bytes, *, extra: bytes = b"") -> bytes:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:5], body[5:]) if part)
    return (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra
            + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks + b"0\r\n\r\n")


@pytest.mark.parametrize("path", [b"/api/v1/auth/token", b"/api/v1/auth/whoami", b"/api/v1/accounts"])
def test_a_chunked_body_is_411_not_read_as_empty(gunicorn_port, path):
    """Without Content-Length Django would read a chunked body as empty (an auth/token
    call would be judged on no credentials, a mutation on no itemData): every /api/
    endpoint answers 411 LENGTH_REQUIRED first, with or without a key."""
    body = json.dumps({"grant_type": "client_credentials", "client_id": "x", "client_secret": "y", "itemData": {}}).encode()
    _assert_json_error(*_exchange(gunicorn_port, _chunked(path, body)), 411, "LENGTH_REQUIRED")
    _assert_json_error(*_exchange(gunicorn_port, _chunked(path, body, extra=b"Authorization: Bearer nope\r\n")), 411, "LENGTH_REQUIRED")


def _head(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and what followed them, reading until the head is complete."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    return int(lines[0].split()[1]), {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}, rest


def _closed_by_server(conn: socket.socket, timeout: float = 10) -> bool:
    """The server ends the connection (FIN or reset) rather than waiting for a next request."""
    conn.settimeout(timeout)
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_an_early_413_closes_the_connection_while_the_client_is_still_sending(gunicorn_port):
    """A 30 MB body is refused from its Content-Length before it is read. The connection then
    holds the unread rest of the body: answering keep-alive would let a client reuse it and
    read the service's next answer out of step (docs/api.md, Limits). So: Connection: close,
    and the server closes."""
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=20) as conn:
        conn.sendall(b"POST /api/v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 31457280\r\n\r\n" + b"{" + b" " * 65535)
        status, headers, _ = _head(conn)
        assert status == 413 and headers["connection"] == "close", (status, headers)
        assert _closed_by_server(conn)


def test_a_chunked_body_refused_unread_closes_the_connection(gunicorn_port):
    raw = _chunked(b"/api/v1/auth/whoami", b'{"itemData": {}}').replace(b"Connection: close\r\n", b"")
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=20) as conn:
        conn.sendall(raw)
        status, headers, _ = _head(conn)
        assert status == 411 and headers["connection"] == "close"
        assert _closed_by_server(conn)


def test_an_answer_after_the_body_was_read_keeps_the_connection_alive(gunicorn_port):
    """The rule is about unread bodies: a refusal of a body the service read (401 after the
    JSON was parsed), or a request without a body, keeps the connection for the next one."""
    request = b"POST /api/v1/auth/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=20) as conn:
        for _ in range(2):  # the second answer comes on the same connection
            conn.sendall(request)
            status, headers, rest = _head(conn)
            assert status == 401 and headers["connection"] == "keep-alive"
            length = int(headers["content-length"])
            while len(rest) < length:
                rest += conn.recv(65536)
