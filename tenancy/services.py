"""Writes for tenants and API keys (shared by management commands, the admin and views)."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from ledger_project.api.errors import ConflictError, LedgerError, NotAuthenticatedError

from .models import ApiKey, IdempotencyRecord, TenantOrganization
from .roles import ALL_ROLES

_ACCESS_TOKEN_PREFIX = "lat_"
_ACCESS_TOKEN_SALT = "ledger.tenancy.access-token"
_SECRET_PREFIX = "lsk_"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedApiKey:
    """A new key and its secret: the only moment the secret exists in clear."""

    api_key: ApiKey
    secret: str

    def as_json(self) -> dict:
        return {
            "keyId": self.api_key.key_id,
            "secret": self.secret,
            "organizationExternalId": self.api_key.organization.external_id,
            "roles": list(self.api_key.roles),
        }


def tenant_create(*, external_id: str, name: str) -> TenantOrganization:
    external_id = external_id.strip()
    if not external_id:
        raise LedgerError("externalId must not be empty.", field="externalId")
    if TenantOrganization.objects.filter(external_id=external_id).exists():
        raise ConflictError(f"Organization {external_id!r} already exists.", field="externalId")
    return TenantOrganization.objects.create(external_id=external_id, name=name.strip() or external_id)


def tenant_set_active(*, tenant: TenantOrganization, active: bool) -> None:
    """(De)activate an organization: its keys stop (or resume) authenticating."""
    TenantOrganization.objects.filter(pk=tenant.pk).update(is_active=active)
    tenant.is_active = active
    _key_cache_clear()


def roles_validate(roles: list[str]) -> list[str]:
    unknown = sorted(set(roles) - ALL_ROLES)
    if unknown:
        raise LedgerError(f"Unknown role(s): {', '.join(unknown)}. Known roles: {', '.join(sorted(ALL_ROLES))}.", field="roles", code="INVALID_ENUM")
    return sorted(set(roles))


def api_key_create(*, organization: TenantOrganization, roles: list[str] | None = None, name: str = "", rate_limit_per_minute: int | None = None) -> IssuedApiKey:
    secret = _SECRET_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        organization=organization,
        key_id="ak_" + secrets.token_hex(10),
        secret_hash=hash_secret(secret),
        name=name,
        roles=roles_validate(roles or []),
        rate_limit_per_minute=rate_limit_per_minute,
    )
    return IssuedApiKey(api_key=api_key, secret=secret)


def api_key_deactivate(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk).update(is_active=False)
    _key_cache_clear()


# Resolved keys are cached per process for LEDGER_API_KEY_CACHE_SECONDS (default 5): the
# key query is a third of a small request's cost. Deactivation clears this process's
# cache at once; other processes notice within the TTL (docs/auth.md).
_key_cache: dict[str, tuple[float, ApiKey]] = {}
_key_cache_lock = threading.Lock()


def _key_cache_clear() -> None:
    with _key_cache_lock:
        _key_cache.clear()


def _cached_key(cache_key: str, load) -> ApiKey | None:
    ttl = settings.LEDGER_API_KEY_CACHE_SECONDS
    now = time.monotonic()
    hit = _key_cache.get(cache_key)
    if hit is not None and now - hit[0] < ttl:
        return hit[1]
    api_key = load()
    if api_key is not None and ttl > 0:
        with _key_cache_lock:
            if len(_key_cache) > 10_000:
                _key_cache.clear()
            _key_cache[cache_key] = (now, api_key)
    return api_key


# Access tokens are signed (HMAC with SECRET_KEY), not stored: they name the key and a
# fragment of its secret hash, so deactivating the key or replacing its secret ends every
# token issued for it. Lifetime: LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS (docs/auth.md).
def access_token_issue(*, client_id: str, client_secret: str) -> dict:
    api_key = (
        ApiKey.objects.select_related("organization")
        .filter(key_id=client_id, secret_hash=hash_secret(client_secret or ""), is_active=True, organization__is_active=True)
        .first()
    )
    if api_key is None:
        raise NotAuthenticatedError("Unknown client_id or wrong client_secret.", code="INVALID_CLIENT")
    lifetime = settings.LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS
    token = _ACCESS_TOKEN_PREFIX + signing.dumps({"k": api_key.key_id, "h": api_key.secret_hash[:16]}, salt=_ACCESS_TOKEN_SALT)
    return {"access_token": token, "token_type": "Bearer", "expires_in": lifetime}


def api_key_for_token(token: str) -> ApiKey:
    """The active key a bearer token stands for, or NotAuthenticatedError."""
    if token.startswith(_ACCESS_TOKEN_PREFIX):
        try:
            claims = signing.loads(token[len(_ACCESS_TOKEN_PREFIX):], salt=_ACCESS_TOKEN_SALT, max_age=settings.LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS)
        except signing.SignatureExpired:
            raise NotAuthenticatedError("The access token has expired; request a new one at /api/v1/auth/token.", code="TOKEN_EXPIRED")
        except signing.BadSignature:
            raise NotAuthenticatedError("The bearer token is not valid.")
        api_key = _cached_key("id:" + str(claims.get("k")), lambda: ApiKey.objects.select_related("organization").filter(key_id=claims.get("k")).first())
        if api_key is None or not api_key.secret_hash.startswith(str(claims.get("h"))):
            raise NotAuthenticatedError("The bearer token is not valid.")
    else:
        secret_hash = hash_secret(token)
        api_key = _cached_key("h:" + secret_hash, lambda: ApiKey.objects.select_related("organization").filter(secret_hash=secret_hash).first())
        if api_key is None:
            raise NotAuthenticatedError("The bearer token is not valid.")
    if not api_key.is_active or not api_key.organization.is_active:
        raise NotAuthenticatedError("The API key is inactive.", code="API_KEY_INACTIVE")
    _touch_last_used(api_key)
    return api_key


def _touch_last_used(api_key: ApiKey) -> None:
    # At most one write a minute per key: last_used_at is for operators, not accounting.
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > timedelta(minutes=1):
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now


def idempotency_records_purge(*, older_than_hours: int | None = None) -> int:
    hours = older_than_hours if older_than_hours is not None else settings.LEDGER_IDEMPOTENCY_RETENTION_HOURS
    cutoff = timezone.now() - timedelta(hours=hours)
    with transaction.atomic():
        deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
