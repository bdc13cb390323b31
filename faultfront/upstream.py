"""The node behind the front: HTTP/1.1 keep-alive, one connection per front thread."""

from __future__ import annotations

import http.client
import json
import threading
from urllib.parse import urlsplit


class Upstream:
    def __init__(self, url: str, timeout: float = 30.0):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"upstream must be http(s): {url}")
        self.url = url
        self.host, self.port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self.path = parts.path or "/"
        self.https = parts.scheme == "https"
        self.timeout = timeout
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = self._local.conn = cls(self.host, self.port, timeout=self.timeout)
        return conn

    def post(self, body: bytes) -> tuple[int, bytes]:
        """(status, body) of the node's answer; OSError when it cannot be reached."""
        for attempt in (1, 2):  # a kept-alive connection the node closed meanwhile: once more, fresh
            conn = self._connection()
            try:
                conn.request("POST", self.path, body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def call(self, method: str, params=None):
        status, body = self.post(json.dumps({"jsonrpc": "2.0", "id": 0, "method": method, "params": params or []}).encode())
        return json.loads(body).get("result")
