"""A webhook subscription's secrets (docs/webhooks.md, "Secrets"): its auth credentials and
signing secrets are stored sealed by custody (``custody.services.secret_seal``, bound to the
subscription and the field), opened in clear for delivery only, shown redacted everywhere
else, and re-sealed by master-key rotation (the sealed store registered below).
"""

from __future__ import annotations

import secrets
from collections import Counter

from django.db import transaction

from tenancy.scoping import worker_only

from .models import WebhookSubscription

#: (config object, secret field) pairs of a webhook's auth
SECRET_FIELDS = (("apiKeyAuthConfig", "keyValue"), ("oauth2AuthConfig", "clientSecret"), ("oauth2AuthConfig", "password"))
REDACTED = "********"
SIGNING_SECRET_PREFIX = "whsec_"


def purpose(subscription: WebhookSubscription, name: str) -> str:
    return f"webhook-subscription:{subscription.offchain_id}:{name}"


def seal(subscription: WebhookSubscription, name: str, value: str) -> dict:
    from custody.services import secret_seal

    return {"sealed": secret_seal(value=value, purpose=purpose(subscription, name))}


def open_sealed(subscription: WebhookSubscription, name: str, stored: dict | None) -> str | None:
    from custody.services import secret_open

    if not stored or "sealed" not in stored:
        return None
    return secret_open(sealed=stored["sealed"], purpose=purpose(subscription, name))


def sealed_auth(subscription: WebhookSubscription, data: dict) -> dict:
    """apiKeyAuthConfig / oauth2AuthConfig as validated → what the row stores."""
    auth = {}
    for config in ("apiKeyAuthConfig", "oauth2AuthConfig"):
        section = data.get(config)
        if not section:
            continue
        section = {k: v for k, v in section.items() if v not in (None, "")}
        for name, field in SECRET_FIELDS:
            if name == config and section.get(field) is not None:
                section[field] = seal(subscription, f"{config}.{field}", section[field])
        auth[config] = section
    return auth


def opened_auth(subscription: WebhookSubscription) -> dict:
    """The clear credentials (for delivery only)."""
    auth = {config: dict(section) for config, section in (subscription.auth or {}).items()}
    for config, field in SECRET_FIELDS:
        if config in auth and field in auth[config]:
            auth[config][field] = open_sealed(subscription, f"{config}.{field}", auth[config][field])
    return auth


def redacted_auth(subscription: WebhookSubscription) -> dict:
    auth = {config: dict(section) for config, section in (subscription.auth or {}).items()}
    for config, field in SECRET_FIELDS:
        if config in auth and field in auth[config]:
            auth[config][field] = REDACTED
    return auth


def signing_secrets(subscription: WebhookSubscription) -> tuple[str, str | None]:
    """The current signing secret and the previous one (it also signs until
    ``previous_valid_until``), in clear: for delivery only."""
    return (open_sealed(subscription, "signingSecret", subscription.signing_secret),
            open_sealed(subscription, "previousSigningSecret", subscription.previous_signing_secret))


def new_signing_secret(subscription: WebhookSubscription) -> None:
    subscription.signing_secret = seal(subscription, "signingSecret", SIGNING_SECRET_PREFIX + secrets.token_urlsafe(32))


# --- rotation: the sealed store of subscription secrets ----------------------------------------


def _sealed_values(sub_fields):
    """(name, sealed) of one row's stored secrets."""
    auth, signing, previous = sub_fields
    for config, field in SECRET_FIELDS:
        value = ((auth or {}).get(config) or {}).get(field)
        if isinstance(value, dict) and "sealed" in value:
            yield f"{config}.{field}", value["sealed"]
    for name, value in (("signingSecret", signing), ("previousSigningSecret", previous)):
        if isinstance(value, dict) and "sealed" in value:
            yield name, value["sealed"]


@worker_only  # master-key rotation (management command): every tenant
def _references() -> Counter:
    from custody.services import secret_key_id

    counts: Counter = Counter()
    for fields in WebhookSubscription.unscoped.values_list("auth", "signing_secret", "previous_signing_secret").iterator():
        counts.update(secret_key_id(sealed) for _, sealed in _sealed_values(fields))
    return counts


@worker_only  # master-key rotation (management command): every tenant
def _reseal(current: bytes) -> int:
    """Re-seal every secret not under ``current``, each row locked and re-read while it is
    rewritten (a concurrent update is not lost)."""
    from custody.services import master_key_id, secret_key_id, secret_reseal

    current_id, count = master_key_id(current), 0
    for pk in list(WebhookSubscription.unscoped.values_list("pk", flat=True)):
        with transaction.atomic():
            sub = WebhookSubscription.unscoped.select_for_update().get(pk=pk)
            changed = 0

            def again(name: str, value: dict) -> dict:
                nonlocal changed
                if secret_key_id(value["sealed"]) == current_id:
                    return value
                changed += 1
                return {"sealed": secret_reseal(sealed=value["sealed"], purpose=purpose(sub, name), current=current)}

            auth = {config: dict(section) for config, section in (sub.auth or {}).items()}
            for config, field in SECRET_FIELDS:
                if isinstance((auth.get(config) or {}).get(field), dict):
                    auth[config][field] = again(f"{config}.{field}", auth[config][field])
            sub.auth = auth
            if sub.signing_secret:
                sub.signing_secret = again("signingSecret", sub.signing_secret)
            if sub.previous_signing_secret:
                sub.previous_signing_secret = again("previousSigningSecret", sub.previous_signing_secret)
            if changed:
                WebhookSubscription.unscoped.filter(pk=pk).update(auth=sub.auth, signing_secret=sub.signing_secret, previous_signing_secret=sub.previous_signing_secret)
        count += changed
    return count


def _register() -> None:
    from custody.services import SealedStore, register_sealed_store

    register_sealed_store(SealedStore("webhooks.credentials", references=_references, reseal=_reseal))


_register()
