"""HTTP/1.1 JSON-RPC 2.0 and PubSub servers of the local node: one asyncio thread, group commit.

All requests run on the event loop's thread, one after another, so LiteSVM never sees
two callers and no lock is contended. Answers that depend on executed transactions are
held until the end of the loop turn: everything executed in the turn is persisted in one
SQLite commit, then the answers are written and the PubSub notifications of the commit
sent (pubsub.py, on the same loop: websocket.py). A transaction is therefore always
durable before its answer or any notification about it leaves, and concurrent clients
share the commit (docs/localnet.md).

A request about the block of the slot still open (methods_history.py) is held until the
slot ends, then run again; later requests on the same connection wait behind it, so
answers keep their order. GET / and GET /status show the node's figures.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import socket
import time

from .methods import VERSION, Methods
from .errors import RpcError
from .node import FINALIZED_DEPTH, Node
from .pubsub import MAX_BUFFERED_BYTES, MAX_MESSAGE_BYTES, MAX_SUBSCRIPTIONS_PER_CONNECTION, Hub
from .rpcutil import NotYet
from .websocket import PubSubConnection

logger = logging.getLogger("ledger.localnet")
MAX_BODY = 50 * 1024 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 411: "Length Required", 413: "Payload Too Large"}


def _error(code: int, message: str, rid=None, data=None) -> dict:
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "error": err, "id": rid}


def _one(methods: Methods, request, params=None) -> dict:
    """One JSON-RPC request's answer; NotYet propagates (the server holds it)."""
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or "method" not in request:
        return _error(-32600, "Invalid request", request.get("id") if isinstance(request, dict) else None)
    rid = request.get("id")
    try:
        return {"jsonrpc": "2.0", "result": methods.dispatch(request["method"], request.get("params") if params is None else params), "id": rid}
    except RpcError as exc:
        return _error(exc.code, exc.message, rid, exc.data)
    except NotYet:
        raise
    except Exception:  # a bug in one method must not take the node down
        logger.exception("internal error in %s", request.get("method"))
        return _error(-32603, "Internal error", rid)


class Held:
    """A request (or batch) waiting for the open slot to end: answers known so far, and
    the items to run again with their rewritten params."""

    def __init__(self, proto, requests: list, answers: list, waiting: list[tuple[int, list]], batch: bool, close: bool):
        self.proto, self.requests, self.answers, self.waiting, self.batch, self.close = proto, requests, answers, waiting, batch, close


def _http(status: int, body: bytes, content_type: str = "application/json", close: bool = False) -> bytes:
    head = f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    if close:
        head += "Connection: close\r\n"
    return (head + "\r\n").encode() + body


class RpcProtocol(asyncio.Protocol):
    def __init__(self, server: "LocalnetServer"):
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.continued = False
        self.held = False  # an answer of this connection waits for the slot to end

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.parse()

    def parse(self) -> None:
        while not self.held and self.transport is not None and not self.transport.is_closing():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > 65536:
                    self._reply(_http(400, b"headers too large", "text/plain", close=True), close=True)
                return
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                self._reply(_http(400, b"bad request line", "text/plain", close=True), close=True)
                return
            method, path, version = parts
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._reply(_http(411, b"send Content-Length", "text/plain", close=True), close=True)
                return
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY:
                self._reply(_http(413, b"payload too large", "text/plain", close=True), close=True)
                return
            if len(self.buffer) < end + 4 + length:
                if headers.get("expect", "").lower() == "100-continue" and not self.continued:
                    self.continued = True
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return
            body = bytes(self.buffer[end + 4: end + 4 + length])
            del self.buffer[: end + 4 + length]
            self.continued = False
            connection = headers.get("connection", "").lower()
            close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
            self.server.serve(self, method, path, body, close)

    def _reply(self, payload: bytes, close: bool) -> None:
        self.server.respond(self, payload, close)

    def connection_lost(self, exc) -> None:
        self.transport = None


class LocalnetServer:
    def __init__(self, node: Node, *, max_subscriptions: int = MAX_SUBSCRIPTIONS_PER_CONNECTION, max_message_bytes: int = MAX_MESSAGE_BYTES,
                 max_buffered_bytes: int = MAX_BUFFERED_BYTES, enable_block_subscription: bool = False):
        self.node = node
        self.node.defer_commits = True
        self.methods = Methods(node)
        self.hub = Hub(node, max_subscriptions=max_subscriptions, max_message_bytes=max_message_bytes, max_buffered_bytes=max_buffered_bytes,
                       enable_block_subscription=enable_block_subscription)
        self.outbox: list[tuple[RpcProtocol, bytes, bool]] = []
        self.held: list[Held] = []
        self.flush_scheduled = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = time.monotonic()

    # --- HTTP -----------------------------------------------------------------------------
    def serve(self, proto: RpcProtocol, method: str, path: str, body: bytes, close: bool) -> None:
        if method == "POST":
            self._rpc(proto, body, close)
            return
        route = path.split("?", 1)[0]
        if method == "GET" and route == "/health":
            payload = _http(200, b"ok", "text/plain", close=close)
        elif method == "GET" and route == "/status":
            payload = _http(200, json.dumps(self.status(), separators=(",", ":")).encode(), close=close)
        elif method == "GET" and route == "/":
            payload = _http(200, self.status_page().encode(), "text/html; charset=utf-8", close=close)
        else:
            payload = _http(405, b"Used HTTP Method is not allowed. POST or OPTIONS is required", "text/plain", close=close)
        self.respond(proto, payload, close)

    def _rpc(self, proto: RpcProtocol, body: bytes, close: bool) -> None:
        try:
            payload = json.loads(body)
        except ValueError:
            self._answer(proto, _error(-32700, "Parse error"), close)
            return
        batch = isinstance(payload, list)
        if batch and not payload:
            self._answer(proto, _error(-32600, "Invalid request"), close)
            return
        requests = payload if batch else [payload]
        answers: list = [None] * len(requests)
        waiting = []
        for index, request in enumerate(requests):
            try:
                answers[index] = _one(self.methods, request)
            except NotYet as wait:
                waiting.append((index, wait.params))
        if waiting:
            proto.held = True
            self.held.append(Held(proto, requests, answers, waiting, batch, close))
            return
        self._answer(proto, answers if batch else answers[0], close)

    def _answer(self, proto: RpcProtocol, answer, close: bool) -> None:
        self.respond(proto, _http(200, json.dumps(answer, separators=(",", ":")).encode(), close=close), close)

    def _release_held(self) -> None:
        """The slot has ended: run the held requests again and answer them in order."""
        held, self.held = self.held, []
        for item in held:
            still = []
            for index, params in item.waiting:
                try:
                    item.answers[index] = _one(self.methods, item.requests[index], params)
                except NotYet as wait:
                    still.append((index, wait.params))
            if still:
                item.waiting = still
                self.held.append(item)
                continue
            item.proto.held = False
            self._answer(item.proto, item.answers if item.batch else item.answers[0], item.close)
            if item.proto.transport is not None:
                item.proto.parse()  # requests that queued behind it

    def respond(self, proto: RpcProtocol, payload: bytes, close: bool) -> None:
        self.outbox.append((proto, payload, close))
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        """End of the loop turn: persist what ran (notifying subscribers), then release
        the held answers."""
        self.flush_scheduled = False
        outbox, self.outbox = self.outbox, []
        try:
            self.node.commits.flush()
        except Exception:
            logger.exception("could not persist executed transactions; stopping")
            for proto, _, _ in outbox:
                if proto.transport is not None:
                    proto.transport.abort()
            self.loop.stop()
            return
        for proto, payload, close in outbox:
            transport = proto.transport
            if transport is None or transport.is_closing():
                continue
            transport.write(payload)
            if close:
                transport.close()

    # --- status ---------------------------------------------------------------------------
    def status(self) -> dict:
        node = self.node
        return {
            "version": VERSION["solana-core"], "genesisHash": node.genesis_hash, "identity": str(node.identity),
            "slot": node.slot, "finalizedSlot": node.root(), "slotSeconds": node.slot_seconds, "finalizedDepth": FINALIZED_DEPTH,
            "transactionCount": node.transaction_count,
            "transactionsPerSecond": {"last10s": round(node.rate(10), 1), "last60s": round(node.rate(60), 1)},
            "queueDepth": {"answersAwaitingCommit": len(self.outbox), "transactionsAwaitingCommit": len(node.commits.pending), "requestsAwaitingSlotEnd": len(self.held)},
            "pubsub": self.hub.stats(),
            "uptimeSeconds": round(time.monotonic() - self.started),
            "rpc": self.methods.rpc_address, "websocket": self.methods.pubsub_address,
        }

    def status_page(self) -> str:
        status = self.status()
        rows = []
        for key, value in status.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items())
            rows.append(f"<tr><th>{html.escape(key)}</th><td>{html.escape(str(value))}</td></tr>")
        return ("<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='2'><title>local node</title></head>"
                f"<body><h1>Local SVM node</h1><table>{''.join(rows)}</table><p>JSON: <a href='/status'>/status</a></p></body></html>")

    # --- running --------------------------------------------------------------------------
    async def run(self, host: str, port: int, ready=None, stop: asyncio.Event | None = None, ws_port: int | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        server = await self.loop.create_server(lambda: RpcProtocol(self), host, port, reuse_address=True, backlog=256)
        self.port = server.sockets[0].getsockname()[1]
        pubsub = await self.loop.create_server(lambda: PubSubConnection(self.hub), host, self.port + 1 if ws_port is None else ws_port, reuse_address=True, backlog=256)
        self.ws_port = pubsub.sockets[0].getsockname()[1]
        self.methods.rpc_address, self.methods.pubsub_address = f"{host}:{self.port}", f"{host}:{self.ws_port}"
        tick = self.loop.call_later(self.node.slot_seconds, self._tick)
        self._tick_handle = tick
        if ready is not None:
            ready(self)
        try:
            async with server, pubsub:
                await (stop.wait() if stop is not None else asyncio.Event().wait())
        finally:
            self._tick_handle.cancel()
            for conn in list(self.hub.connections):
                if conn.transport is not None:
                    conn.transport.abort()
            self.node.commits.flush()
            self.node.stop()

    def _tick(self) -> None:
        self._tick_handle = self.loop.call_later(self.node.slot_seconds, self._tick)
        self.node.tick()
        if self.held:
            self._release_held()
