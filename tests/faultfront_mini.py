"""A tiny fault-injecting JSON-RPC front for tests: forwards every call to the local node
except the ones a rule claims, which it answers as a struggling provider would (HTTP 429
with Retry-After, HTTP 502, or a 200 carrying Agave's -32005 "Node is unhealthy")."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

UNHEALTHY = {"code": -32005, "message": "Node is unhealthy", "data": {"numSlotsBehind": 120}}


class FaultFront:
    def __init__(self, upstream: str):
        self.upstream = upstream
        self.rules: dict[str, list[str]] = {}  # method → faults to answer, in order ("always:" prefix repeats)
        self.seen: list[str] = []
        front = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                calls = json.loads(body)
                methods = [c["method"] for c in (calls if isinstance(calls, list) else [calls])]
                front.seen.extend(methods)
                fault = front._fault(methods[0])
                if fault == "502":
                    return self._answer(502, b"Bad Gateway")
                if fault == "429":
                    return self._answer(429, b"Too many requests", {"Retry-After": "1"})
                if fault == "unhealthy":
                    items = [{"jsonrpc": "2.0", "id": c.get("id"), "error": UNHEALTHY} for c in (calls if isinstance(calls, list) else [calls])]
                    return self._answer(200, json.dumps(items if isinstance(calls, list) else items[0]).encode())
                upstream = httpx.post(front.upstream, content=body, headers={"Content-Type": "application/json"}, timeout=10)
                self._answer(upstream.status_code, upstream.content)

            def _answer(self, status, content, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(content)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _fault(self, method: str) -> str | None:
        queue = self.rules.get(method)
        if not queue:
            return None
        if queue[0].startswith("always:"):
            return queue[0].split(":", 1)[1]
        return queue.pop(0)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
