"""Real local HTTP servers for webhook tests and the benchmark: a receiver that records every
request, an OAuth 2.0 token endpoint (client credentials, audience), and a JSON document
source for market-data jobs. All are ``http.server`` on 127.0.0.1, HTTP/1.1 keep-alive, in
a thread of the test process.

Signature checks here are the receiver's own (hmac, hashlib): written from docs/webhooks.md,
not from the service's code.
"""

from __future__ import annotations

import abc
import hashlib
import hmac
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from localnet.testing import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # time.time() when it arrived
    status: int = 0  # what the receiver answered

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    @property
    def event_id(self) -> str:
        return self.headers.get("x-ledger-event-id", "")


def verify_signature(secret: str, headers: dict[str, str], body: bytes, *, tolerance: float | None = 300, now: float | None = None) -> bool:
    """What a receiver does (docs/webhooks.md, Signing): X-Ledger-Signature is
    ``t=<unix seconds>,v1=<hex>[,v1=<hex>]``; valid when one v1 is HMAC-SHA256(secret,
    "<t>." + body) and t is recent."""
    parts = [part.split("=", 1) for part in headers.get("x-ledger-signature", "").split(",") if "=" in part]
    stamps = [value for key, value in parts if key == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit():
        return False
    if tolerance is not None and abs((now or time.time()) - int(stamps[0])) > tolerance:
        return False
    expected = hmac.new(secret.encode(), stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value) for key, value in parts if key == "v1")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """A caller hanging up (a capped body, a deadline) is what some tests do on
        purpose: not worth a traceback on stderr. Anything else is printed as before."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _LocalServer(abc.ABC):
    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.lock = threading.Lock()
        self._server: _Server | None = None

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # answer in one segment: no delayed-ACK stall

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._reply(*outer.answer(self.path, {k.lower(): v for k, v in self.headers.items()}, body))

            def do_GET(self):
                self._reply(*outer.answer_get(self.path, {k.lower(): v for k, v in self.headers.items()}))

            def _reply(self, status, payload, extra):
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    outer.write_body(self.wfile, payload)
                except OSError:
                    pass

        return Handler

    @abc.abstractmethod
    def answer(self, path: str, headers: dict, body: bytes) -> tuple[int, bytes, dict]:
        """(status, body, extra headers) for one POST: each server says what it serves."""

    def answer_get(self, path: str, headers: dict) -> tuple[int, bytes, dict]:
        """A GET: 405 unless the server serves documents (JsonSource)."""
        return 405, b"", {"Allow": "POST"}

    def write_body(self, wfile, payload: bytes) -> None:
        wfile.write(payload)

    def start(self):
        self._server = _Server(("127.0.0.1", self.port), self._handler())
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listening socket: new connections are refused (as a host that is down)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Receiver(_LocalServer):
    """A webhook endpoint. ``status`` (or ``decide(received) -> status``) is its answer;
    ``delay`` holds each answer that long; with ``token_server`` it answers 401 unless the
    request carries one of that server's live tokens."""

    def __init__(self, port: int | None = None, *, status: int = 200, delay: float = 0.0, token_server: "TokenServer | None" = None, answer_body: bytes = b"ok"):
        super().__init__(port)
        self.status, self.delay, self.token_server, self.answer_body = status, delay, token_server, answer_body
        self.decide = None
        self.extra_headers: dict[str, str] = {}
        self.received: list[Received] = []

    def answer(self, path, headers, body):
        item = Received(path, headers, body, time.time())
        with self.lock:
            self.received.append(item)
        if self.delay:
            time.sleep(self.delay)
        status = self.status
        if self.token_server is not None and not self.token_server.valid(headers.get("authorization", "")):
            status = 401
        elif self.decide is not None:
            status = self.decide(item)
        item.status = status
        return status, self.answer_body, dict(self.extra_headers)

    def delivered(self) -> list[Received]:
        with self.lock:
            return [r for r in self.received if 200 <= r.status < 300]

    def delivered_ids(self) -> list[str]:
        return [r.event_id for r in self.delivered()]


@dataclass
class TokenServer(_LocalServer):
    """An OAuth 2.0 token endpoint (RFC 6749 client credentials, with Auth0-style
    ``audience``): POST form grant_type=client_credentials, client_id, client_secret,
    audience → {"access_token", "token_type": "Bearer", "expires_in"}."""

    client_id: str = "ledger-client"
    client_secret: str = field(default_factory=lambda: f"cs-{uuid.uuid4().hex}")
    audience: str = "https://receiver.example/api"
    expires_in: int = 3600
    requests: list[dict] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)

    def __post_init__(self):
        super().__init__(None)

    def answer(self, path, headers, body):
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        with self.lock:
            self.requests.append(form)
        if form.get("grant_type") != "client_credentials" or form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return 401, b'{"error":"invalid_client"}', {"Content-Type": "application/json"}
        if form.get("audience") != self.audience:
            return 400, b'{"error":"invalid_request","error_description":"unknown audience"}', {"Content-Type": "application/json"}
        token = f"at-{uuid.uuid4().hex}"
        with self.lock:
            self.issued.append(token)
        return 200, json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}).encode(), {"Content-Type": "application/json"}

    def valid(self, authorization: str) -> bool:
        scheme, _, token = authorization.partition(" ")
        with self.lock:
            return scheme.lower() == "bearer" and token in self.issued and token not in self.revoked

    def revoke_all(self) -> None:
        with self.lock:
            self.revoked |= set(self.issued)


class JsonSource(_LocalServer):
    """A market-data source (docs/marketdata.md): answers every GET with ``body`` (or
    ``document`` as JSON) and ``status``, after ``delay`` seconds; with ``drip`` it sends
    the body one byte every ``drip`` seconds and sets ``cut`` when the caller hangs up
    before the end. Records each request's path and headers."""

    def __init__(self, port: int | None = None, *, document=None, body: bytes | None = None, status: int = 200, delay: float = 0.0,
                 drip: float = 0.0, extra_headers: dict | None = None):
        super().__init__(port)
        self.body = body if body is not None else json.dumps(document).encode()
        self.status, self.delay, self.drip = status, delay, drip
        self.extra_headers = {"Content-Type": "application/json", **(extra_headers or {})}
        self.requests: list[tuple[str, dict]] = []
        self.cut = threading.Event()

    def answer(self, path, headers, body):
        return 405, b"", {"Allow": "GET"}

    def answer_get(self, path, headers):
        with self.lock:
            self.requests.append((path, headers))
        if self.delay:
            time.sleep(self.delay)
        return self.status, self.body, dict(self.extra_headers)

    def write_body(self, wfile, payload: bytes) -> None:
        if not self.drip:
            wfile.write(payload)
            return
        try:
            for offset in range(len(payload)):
                wfile.write(payload[offset:offset + 1])
                wfile.flush()
                time.sleep(self.drip)
        except OSError:
            self.cut.set()
            raise


# --- records: subscriptions and events as the engine writes them ---------------------------

API_KEY = "k-" + uuid.uuid4().hex


def subscribe(tenant, url: str, **data):
    """A registry subscription (the service, in its own write phase)."""
    from django.db import transaction

    from webhooks import services as webhooks

    data = {"name": "receiver", "endpointUrl": url, "eventTypes": ["transaction.post_submit"], "timeout": 5,
            "apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": API_KEY}, **data}
    with transaction.atomic():
        return webhooks.webhook_create(tenant=tenant, cluster="CHAIN_LOCALNET", data=data)


def recorded_transaction(tenant):
    """A FINALIZED Transaction row with a real message (a transfer), nothing on chain: a
    terminal status, so no pump of the test's workers follows it."""
    from solders.hash import Hash
    from solders.keypair import Keypair
    from solders.message import Message
    from solders.system_program import TransferParams, transfer

    from transactions.models import Transaction, TransactionStatus

    payer = Keypair()
    message = Message([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey())
    return Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="positions.transfer_network_currency", message=bytes(message),
                                       blockhash=str(Hash.default()), fee_payer=str(payer.pubkey()), status=TransactionStatus.FINALIZED,
                                       onchain_id=str(Keypair().sign_message(b"x")), required_signers=[str(payer.pubkey())])


def emit(txs, event_type=None) -> list:
    """The engine's writer, as a state change calls it (in its database transaction)."""
    from django.db import transaction

    from webhooks import outbox
    from webhooks.models import WebhookEvent, WebhookEventType

    with transaction.atomic():
        before = WebhookEvent.unscoped.order_by("-pk").values_list("pk", flat=True).first() or 0
        outbox.transaction_events(txs, event_type or WebhookEventType.POST_SUBMIT)
    return list(WebhookEvent.unscoped.filter(pk__gt=before).order_by("pk"))
