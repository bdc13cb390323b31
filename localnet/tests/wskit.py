"""A small synchronous client of the node's PubSub websocket (the `websockets` package's own
client), for tests that check the wire messages themselves."""

from __future__ import annotations

import json
import time
from urllib.parse import urlparse

from websockets.sync.client import connect


def ws_url_of(http_url: str) -> str:
    """The Solana convention: PubSub on the RPC port + 1."""
    parsed = urlparse(http_url)
    return f"ws://{parsed.hostname}:{parsed.port + 1}"


class PubSub:
    def __init__(self, url: str):
        self.conn = connect(url, compression=None, open_timeout=10)
        self.next_id = 1
        self.backlog: list[dict] = []

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "PubSub":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, payload) -> None:
        self.conn.send(payload if isinstance(payload, str) else json.dumps(payload))

    def call(self, method: str, params=None) -> dict:
        """The answer to one request (notifications that arrive first are kept)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or []})
        deadline = time.monotonic() + 10
        while True:
            message = json.loads(self.conn.recv(timeout=max(0.1, deadline - time.monotonic())))
            if isinstance(message, dict) and message.get("id") == rid and "method" not in message:
                return message
            self.backlog.append(message)

    def subscribe(self, method: str, params=None) -> int:
        answer = self.call(method, params)
        assert isinstance(answer.get("result"), int), answer
        return answer["result"]

    def notification(self, subscription: int, timeout: float = 10.0) -> dict:
        """The next notification of ``subscription``: the whole JSON-RPC message."""
        for index, message in enumerate(self.backlog):
            if message.get("params", {}).get("subscription") == subscription:
                return self.backlog.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no notification for subscription {subscription}")
            message = json.loads(self.conn.recv(timeout=remaining))
            if message.get("params", {}).get("subscription") == subscription:
                return message
            self.backlog.append(message)

    def nothing_for(self, subscription: int, seconds: float) -> bool:
        """True when ``subscription`` gets no notification within ``seconds``."""
        try:
            self.notification(subscription, seconds)
        except TimeoutError:
            return True
        return False
