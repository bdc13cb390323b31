"""The PubSub websocket (RPC port + 1) on the node's own event loop.

Each connection is an asyncio.Protocol driving the `websockets` package's Sans-I/O
ServerProtocol (handshake, framing, ping/pong, close). It runs on the same thread as the
JSON-RPC server, so the hub (pubsub.py) writes notifications straight to the socket from
the group commit's end without locks, tasks or copies of the node's state; an idle
connection costs nothing but its socket. Bounded: an incoming message over
`max_message_bytes` closes the connection (1009), as does a client that lets more than
`max_buffered_bytes` of notifications pile up unread (the reference disconnects a client
that lags).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from websockets.frames import Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

logger = logging.getLogger("ledger.localnet.pubsub")


class PubSubConnection(asyncio.Protocol):
    def __init__(self, hub):
        self.hub = hub
        self.ws = ServerProtocol(max_size=hub.max_message_bytes)
        self.transport: asyncio.Transport | None = None
        self.subscriptions: dict[int, object] = {}
        self.fragments: list[bytes] = []
        self.closing_timer: asyncio.TimerHandle | None = None

    # --- asyncio ------------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.hub.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.ws.receive_data(data)
        self._events()

    def eof_received(self):
        self.ws.receive_eof()
        self._events()
        return False

    def connection_lost(self, exc) -> None:
        self.transport = None
        if self.closing_timer is not None:
            self.closing_timer.cancel()
        self.hub.disconnected(self)

    # --- websocket ------------------------------------------------------------------------
    def _events(self) -> None:
        for event in self.ws.events_received():
            if isinstance(event, Request):
                response = self.ws.accept(event)
                self.ws.send_response(response)
            elif event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                self.fragments.append(event.data)
                if event.fin:
                    message, self.fragments = b"".join(self.fragments), []
                    self.hub.received(self, message)
        self._write()

    def _write(self) -> None:
        transport = self.transport
        if transport is None:
            return
        for chunk in self.ws.data_to_send():
            if chunk:
                transport.write(chunk)
            elif transport.can_write_eof():
                transport.write_eof()
        if self.ws.close_expected() and self.closing_timer is None:
            # The closing handshake is done on our side: give the client a moment to close
            # the TCP connection first, as RFC 6455 prefers, then close it ourselves.
            self.closing_timer = asyncio.get_running_loop().call_later(2.0, self._abort)
        elif self.ws.state is State.CLOSED:
            transport.close()

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    @property
    def open(self) -> bool:
        return self.transport is not None and self.ws.state is State.OPEN

    def send(self, text: str) -> None:
        """One message to the client, written now (we are on the loop's thread)."""
        if not self.open:
            return
        self.ws.send_text(text.encode())
        self._write()
        if self.transport is not None and self.transport.get_write_buffer_size() > self.hub.max_buffered_bytes:
            logger.warning("pubsub client lags (%d bytes unread): disconnecting", self.transport.get_write_buffer_size())
            self.transport.abort()
