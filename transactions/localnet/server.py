"""HTTP/1.1 JSON-RPC 2.0 server of the local node: one asyncio thread, group commit.

All requests run on the event loop's thread, one after another, so LiteSVM never sees
two callers and no lock is contended. Answers that depend on executed transactions are
held until the end of the loop turn: everything executed in the turn is persisted in one
SQLite commit, then the answers are written. A transaction is therefore always durable
before its answer leaves, and concurrent clients share the commit (docs/localnet.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket

from .methods import Methods
from .node import Node, RpcError

logger = logging.getLogger("ledger.localnet")
MAX_BODY = 50 * 1024 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 405: "Method Not Allowed", 411: "Length Required", 413: "Payload Too Large"}


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
    except Exception:  # a bug in one method must not take the node down
        logger.exception("internal error in %s", request.get("method"))
        return _error(-32603, "Internal error", rid)


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

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None and not self.transport.is_closing():
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
    def __init__(self, node: Node):
        self.node = node
        self.node.defer_commits = True
        self.methods = Methods(node)
        self.outbox: list[tuple[RpcProtocol, bytes, bool]] = []
        self.flush_scheduled = False
        self.loop: asyncio.AbstractEventLoop | None = None

    def serve(self, proto: RpcProtocol, method: str, path: str, body: bytes, close: bool) -> None:
        if method == "POST":
            answer = handle_payload(self.methods, body)
            payload = _http(200, json.dumps(answer, separators=(",", ":")).encode(), close=close)
        elif method == "GET" and path == "/health":
            payload = _http(200, b"ok", "text/plain", close=close)
        else:
            payload = _http(405, b"Used HTTP Method is not allowed. POST or OPTIONS is required", "text/plain", close=close)
        self.respond(proto, payload, close)

    def respond(self, proto: RpcProtocol, payload: bytes, close: bool) -> None:
        self.outbox.append((proto, payload, close))
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        """End of the loop turn: persist what ran, then release the held answers."""
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

    async def run(self, host: str, port: int, ready=None, stop: asyncio.Event | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        server = await self.loop.create_server(lambda: RpcProtocol(self), host, port, reuse_address=True, backlog=256)
        self.port = server.sockets[0].getsockname()[1]
        tick = self.loop.call_later(self.node.slot_seconds, self._tick)
        self._tick_handle = tick
        if ready is not None:
            ready(self)
        try:
            async with server:
                await (stop.wait() if stop is not None else asyncio.Event().wait())
        finally:
            self._tick_handle.cancel()
            self.node.commits.flush()
            self.node.stop()

    def _tick(self) -> None:
        self.node.tick()
        self._tick_handle = self.loop.call_later(self.node.slot_seconds, self._tick)
