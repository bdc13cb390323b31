"""What one delivery attempt sends (docs/webhooks.md, "Delivery"): the subscription's
secrets in clear for this process only (``Material``: never stored, logged or rendered),
the signature header, the OAuth 2.0 access token, the request headers, and the redaction of
every secret from what an attempt stores. The delivery loop (webhooks/delivery.py) claims,
sends and records.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from . import credentials
from .models import WebhookEvent, WebhookSubscription

USER_AGENT = "ledger-webhooks/1"
#: headers the service sets itself: an API key header may not take one of these names
RESERVED_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection", "accept-encoding", "user-agent", "te", "upgrade", "expect"})
RESERVED_PREFIX = "x-ledger-"


@dataclass(frozen=True)
class Material:
    """A subscription's secrets in clear, for this process only (never stored, logged or
    rendered): signing keys, the API key header, the OAuth client."""

    version: datetime
    current_key: bytes
    previous_key: bytes | None
    previous_until: datetime | None
    api_key: tuple[str, str] | None
    oauth: dict | None

    def signing_keys(self, at: datetime) -> list[bytes]:
        keys = [self.current_key]
        if self.previous_key is not None and self.previous_until is not None and self.previous_until > at:
            keys.append(self.previous_key)
        return keys


_materials: dict[int, Material] = {}
_tokens: dict[int, tuple[str, float, datetime]] = {}
_state_lock = threading.Lock()
_token_locks: dict[int, threading.Lock] = defaultdict(threading.Lock)


def subscription_material(sub: WebhookSubscription) -> Material:
    cached = _materials.get(sub.pk)
    if cached is not None and cached.version == sub.updated_at:
        return cached
    auth = credentials.opened_auth(sub)
    current, previous = credentials.signing_secrets(sub)  # both: whether the previous one signs is judged per send
    api_key = auth.get("apiKeyAuthConfig")
    material = Material(
        version=sub.updated_at, current_key=current.encode(), previous_key=previous.encode() if previous else None, previous_until=sub.previous_valid_until,
        api_key=(api_key["httpHeaderName"], api_key.get("keyValue") or "") if api_key else None, oauth=auth.get("oauth2AuthConfig"),
    )
    with _state_lock:
        _materials[sub.pk] = material
    return material


def signature_header(keys: list[bytes], timestamp: int, body: bytes) -> str:
    """``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>`` — one v1 per valid key
    (two during a rotation overlap)."""
    signed = str(timestamp).encode() + b"." + body
    return ",".join([f"t={timestamp}", *(f"v1={hmac.new(key, signed, hashlib.sha256).hexdigest()}" for key in keys)])


def _quoted_forms(secret: str) -> set[str]:
    """``secret`` as libraries quote it in their messages: as is, Python's str and bytes
    reprs (``b'k\\r\\n…'``), JSON, and percent-encoded; and its pieces between control
    characters or spaces (a value split by a CR/LF shows up in two places)."""
    import json
    from urllib.parse import quote, quote_plus

    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1], json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret)}
    forms |= {piece for piece in re.split(r"[\x00-\x20\x7f]+", secret) if len(piece) >= 4}
    return {form for form in forms if len(form) >= 4}  # shorter: it would blank words, not secrets


def without_secrets(text: str, secrets: list[str]) -> str:
    """``text`` (an attempt's error, an answer's excerpt: stored, shown in the admin) with
    every secret of the attempt — API key, OAuth client secret and password, access token,
    signing secrets — in any quoted form replaced by ``********``. The API refuses values
    that would make a client quote them (INVALID_HEADER_VALUE), but rows stored before that
    rule, a receiver echoing the request, or a token endpoint issuing such a token remain."""
    if not text:
        return text
    for form in sorted({form for secret in secrets if secret for form in _quoted_forms(secret)}, key=len, reverse=True):
        text = text.replace(form, credentials.REDACTED)
    return text


def attempt_secrets(material: "Material | None", token: str | None) -> list[str]:
    if material is None:
        return [token] if token else []
    oauth = material.oauth or {}
    keys = [key.decode() for key in (material.current_key, material.previous_key) if key]
    return [value for value in (material.api_key[1] if material.api_key else None, oauth.get("clientSecret"), oauth.get("password"), token, *keys) if value]


class AttemptFailed(Exception):
    """An attempt that got no answer worth recording as one (token endpoint, URL refused)."""


_client = None
_client_pid = None


def http_client():
    """One pooled keep-alive client per process (threads share it)."""
    global _client, _client_pid
    if _client is None or _client_pid != os.getpid():
        import httpx

        from ledger_project.outbound import outbound_client

        size = max(4, settings.LEDGER_WEBHOOK_DELIVERY_THREADS * 2)
        _client = outbound_client(limits=httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=30.0))
        _client_pid = os.getpid()
    return _client




def time_left(deadline: float):
    import httpx

    left = deadline - time.monotonic()
    if left <= 0:
        raise httpx.TimeoutException("the webhook's timeout was used up")
    return httpx.Timeout(left)


def oauth_token(sub: WebhookSubscription, material: Material, deadline: float, *, fresh: bool = False) -> str:
    """The OAuth 2.0 access token (client credentials), cached until 30 s before it expires
    and fetched again when ``fresh`` (the endpoint answered 401)."""
    import json

    from ledger_project.outbound import outbound_send

    with _token_locks[sub.pk]:
        cached = _tokens.get(sub.pk)
        if cached is not None and not fresh and cached[2] == material.version and cached[1] > time.monotonic() + 30:
            return cached[0]
        oauth = material.oauth
        form = {"grant_type": "client_credentials", "client_id": oauth.get("clientId") or "", "client_secret": oauth.get("clientSecret") or ""}
        if oauth.get("audience"):
            form["audience"] = oauth["audience"]
        answer = outbound_send(http_client(), "POST", oauth["accessTokenUrl"], data=form, headers={"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": USER_AGENT},
                               timeout=time_left(deadline), max_body_bytes=64 * 1024)
        if not 200 <= answer.status_code < 300:
            raise AttemptFailed(f"the OAuth token endpoint answered {answer.status_code}")
        try:
            issued = json.loads(answer.body)
            token = issued["access_token"]
            lifetime = float(issued.get("expires_in") or 300)
        except (ValueError, KeyError, TypeError):
            raise AttemptFailed("the OAuth token endpoint's answer has no access_token") from None
        if not isinstance(token, str) or not token:
            raise AttemptFailed("the OAuth token endpoint's answer has no access_token")
        _tokens[sub.pk] = (token, time.monotonic() + lifetime, material.version)
        return token


def request_headers(event: WebhookEvent, material: Material, number: int, at: datetime, body: bytes) -> dict:
    sub = event.subscription
    headers = {}
    if material.api_key is not None:
        name, value = material.api_key
        if name.lower() in RESERVED_HEADERS or name.lower().startswith(RESERVED_PREFIX):
            raise AttemptFailed(f"the API key header name {name!r} is one the service sets itself")
        headers[name] = value
    headers.update({
        "Content-Type": "application/json", "User-Agent": USER_AGENT, "Accept-Encoding": "identity",
        "X-Ledger-Event-Id": str(event.event_id), "X-Ledger-Event-Type": event.event_type, "X-Ledger-Webhook-Id": str(sub.offchain_id),
        "X-Ledger-Delivery-Attempt": str(number), "X-Ledger-Signature": signature_header(material.signing_keys(at), int(at.timestamp()), body),
    })
    if event.replays:
        headers["X-Ledger-Replay"] = str(event.replays)
    return headers
