"""The front's HTTP server (one thread per connection, keep-alive) and its websocket relay.

POST / is judged by ``front.Front``; GET / shows the profile and seed, GET /faults the
decisions taken so far (newest last), for a replay to compare; GET /stats the counts of
stats.py (calls per method, refusals, sends' bytes per signature). The websocket relay, when
asked for, is a plain TCP pipe to the node's PubSub port: subscriptions pass through
untouched (no faults on that path).
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .front import Front, Reply

logger = logging.getLogger("faultfront")
MAX_BODY = 50 * 1024 * 1024


class FrontServer(ThreadingHTTPServer):
    daemon_threads = True  # a hanging answer never holds the process at exit
    allow_reuse_address = True

    def __init__(self, address, front: Front):
        super().__init__(address, FrontHandler)
        self.front = front
        self.stopping = threading.Event()


class FrontHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FrontServer

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self):
        front = self.server.front
        if self.path == "/faults":
            with front._log_lock:
                payload = list(front.log)
        elif self.path == "/stats":
            payload = front.stats.as_dict(dict(front.limits.peak) if front.limits else {})
        else:
            payload = {"profile": front.profile, "seed": front.seed, "upstream": front.upstream.url}
        self._send(Reply("answer", 200, json.dumps(payload).encode(), {"Content-Type": "application/json"}))

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY:
            self._send(Reply("answer", 411 if length is None else 413, b"", {}))
            self.close_connection = True
            return
        body = self.rfile.read(int(length))
        try:
            reply = self.server.front.handle(body)
        except OSError:  # the node went away while the front shaped an answer
            reply = Reply("answer", 502, b"502 Bad Gateway\n", {"Content-Type": "text/plain"})
        if reply.kind == "reset":
            # SO_LINGER 0: close() sends RST, what a client sees of a load balancer dropping it.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif reply.kind == "hang":
            deadline = time.monotonic() + reply.seconds
            while time.monotonic() < deadline and not self.server.stopping.is_set():
                time.sleep(0.05)
            self.close_connection = True  # closed unanswered, as a timed-out proxy does
        else:
            self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        headers = {"Content-Type": "application/json", **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)


class TcpRelay:
    """Accept on (host, port), pipe each connection to (target_host, target_port) both ways."""

    def __init__(self, host: str, port: int, target: tuple[str, int]):
        self.target = target
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()

    def serve(self) -> None:
        while not self.stopping.is_set():
            try:
                client, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._pipe_pair, args=(client,), daemon=True).start()
        self.sock.close()

    def _pipe_pair(self, client: socket.socket) -> None:
        try:
            node = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        node.settimeout(None)
        threading.Thread(target=_pipe, args=(node, client), daemon=True).start()
        _pipe(client, node)

    def stop(self) -> None:
        self.stopping.set()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
