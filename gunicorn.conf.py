"""gunicorn settings for the API (make run, benchmarks; production may override by env).

The request path is CPU-bound Python: a few more processes than cores, two threads each,
beats many threads in few processes (threads queue on one GIL). Measured in
bench/bench_accounts.py on 2 cores.

Request limits gunicorn enforces before the application sees a request (docs/api.md,
Limits): a request line over ``limit_request_line`` bytes → 414, more than
``limit_request_fields`` headers or one over ``limit_request_field_size`` bytes → 431.
Those answers, and gunicorn's other refusals of malformed HTTP, leave in the API's JSON
error shape rather than gunicorn's HTML page (``_json_error`` below).
"""

import json
import multiprocessing
import os
import uuid
from pathlib import Path

import gunicorn.util

workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2))
threads = int(os.environ.get("GUNICORN_THREADS", 2))
worker_class = "gthread"
keepalive = 30
max_requests = 20000
max_requests_jitter = 2000
# SIGTERM: workers get this long to finish the requests they hold, so the API is gone within
# the 10 s every process of the service has to stop in (docs/operations.md, "Stopping").
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", 5))

# The control socket (gunicornc) belongs to this instance, under its var dir as the database
# and broker of `make run` are: gunicorn's default is one per user ($XDG_RUNTIME_DIR or
# ~/.gunicorn/gunicorn.ctl), so a second copy on the host replaced the first's socket and
# deleted it on stopping. A path longer than a Unix socket's limit (108 bytes) turns it off.
_var_dir = Path(os.environ.get("LEDGER_VAR_DIR") or Path(__file__).resolve().parent / "var")
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET") or str(_var_dir / "gunicorn.ctl")
control_socket_disable = len(os.fsencode(control_socket)) >= 104

# The client's address behind a reverse proxy is the application's (LEDGER_TRUSTED_PROXIES,
# ledger_project/client_address.py): gunicorn's forwarded_allow_ips (left at its default,
# loopback) only says whose X-Forwarded-Proto is believed; REMOTE_ADDR stays the socket's.

# The API carries its data in JSON bodies (limited by LEDGER_MAX_BODY_BYTES); URLs and
# headers stay small. 8190 is gunicorn's largest request line.
limit_request_line = int(os.environ.get("GUNICORN_LIMIT_REQUEST_LINE", 8190))
limit_request_fields = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELDS", 100))
limit_request_field_size = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", 8190))

_ERRORS = {
    400: ("BAD_REQUEST", "Malformed HTTP request."),
    403: ("FORBIDDEN", "Request forbidden."),
    414: ("URI_TOO_LONG", f"The request line is longer than {limit_request_line} bytes (GUNICORN_LIMIT_REQUEST_LINE)."),
    417: ("EXPECTATION_FAILED", "Unsupported Expect header."),
    431: ("HEADERS_TOO_LARGE", f"At most {limit_request_fields} header fields of at most {limit_request_field_size} bytes each "
          "(GUNICORN_LIMIT_REQUEST_FIELDS, GUNICORN_LIMIT_REQUEST_FIELD_SIZE)."),
    500: ("INTERNAL_ERROR", "Internal server error."),
    501: ("NOT_IMPLEMENTED", "Unsupported transfer coding."),
}


def _json_error(sock, status_int, reason, mesg):
    """gunicorn.util.write_error in the API's error shape. gunicorn's own message (which
    may quote the request) is not echoed."""
    code, message = _ERRORS.get(status_int, ("BAD_REQUEST", "Malformed HTTP request."))
    request_id = str(uuid.uuid4())
    body = json.dumps({"errors": [{"code": code, "message": message, "field": None}], "requestId": request_id}, separators=(",", ":")).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nx-request-id: {request_id}\r\n\r\n").encode("latin1")
    gunicorn.util.write_nonblock(sock, head + body)


# Workers call gunicorn.util.write_error by module attribute (workers/base.py handle_error).
gunicorn.util.write_error = _json_error

if os.environ.get("GUNICORN_GC_FREEZE", "1") == "1":
    # Load Django once in the master and move everything it allocated out of the
    # collector's view before forking: collections then scan only per-request garbage,
    # which keeps GC pauses out of the latency tail (and pages stay shared between workers).
    import gc

    preload_app = True

    def pre_fork(server, worker):
        gc.freeze()


# Prometheus multiprocess mode (ledger_project/metrics/multiproc.py, docs/operations.md "Metrics"):
# files of processes gone are removed at start; a dead worker's live gauges leave the sum.
def on_starting(server):
    from ledger_project.metrics.multiproc import directory_clean

    directory_clean()


def child_exit(server, worker):
    from ledger_project.metrics.multiproc import process_dead

    process_dead(worker.pid)
