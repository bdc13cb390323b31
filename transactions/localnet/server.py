"""HTTP/1.1 JSON-RPC 2.0 server of the local node (single and batch requests, keep-alive)."""

from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .methods import Methods
from .node import Node, RpcError

logger = logging.getLogger("ledger.localnet")
MAX_BODY = 50 * 1024 * 1024


def _error(code: int, message: str, rid=None, data=None) -> dict:
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "error": err, "id": rid}


def handle_payload(methods: Methods, body: bytes):
    try:
        payload = json.loads(body)
    except ValueError:
        return _error(-32700, "Parse error")
    if isinstance(payload, list):
        if not payload:
            return _error(-32600, "Invalid request")
        return [_one(methods, item) for item in payload]
    return _one(methods, payload)


def _one(methods: Methods, request) -> dict:
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or "method" not in request:
        return _error(-32600, "Invalid request", request.get("id") if isinstance(request, dict) else None)
    rid = request.get("id")
    try:
        return {"jsonrpc": "2.0", "result": methods.dispatch(request["method"], request.get("params")), "id": rid}
    except RpcError as exc:
        return _error(exc.code, exc.message, rid, exc.data)
    except Exception:  # a bug in the node must not kill the connection
        logger.exception("internal error in %s", request.get("method"))
        return _error(-32603, "Internal error", rid)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ledger-localnet"

    def log_message(self, format, *args):  # quiet: one line per request is noise here
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, b"ok", "text/plain")
        else:
            self._send(405, b"Used HTTP Method is not allowed. POST or OPTIONS is required", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, b"payload too large", "text/plain")
            return
        body = self.rfile.read(length)
        answer = handle_payload(self.server.methods, body)
        self._send(200, json.dumps(answer, separators=(",", ":")).encode())


class LocalnetServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, node: Node):
        self.node = node
        self.methods = Methods(node)
        super().__init__(address, Handler)
