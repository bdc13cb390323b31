"""Tenants, their API keys, and the x-request-id idempotency store."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class TenantOrganization(models.Model):
    """A tenant organization. Every tenant-owned record points at exactly one.

    ``external_id`` is the organization identifier the API speaks
    (``organizationExternalId``, ``overrideOrganizationExternalId``).
    """

    offchain_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    external_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["external_id"]
        constraints = [
            models.CheckConstraint(condition=~Q(external_id=""), name="tenant_external_id_not_empty", violation_error_message="externalId must not be empty."),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.name})"


class ApiKey(models.Model):
    """An API key of one organization.

    The secret is shown once, at creation; only its SHA-256 is stored (the secret is 256
    random bits, so a fast hash is enough: there is nothing to brute-force). ``key_id``
    is public: it names the key in logs, the admin and as OAuth ``client_id``.
    The object doubles as DRF's ``request.user`` for API requests.
    """

    organization = models.ForeignKey("tenancy.TenantOrganization", on_delete=models.PROTECT, related_name="api_keys")
    key_id = models.CharField(max_length=40, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    name = models.CharField(max_length=200, blank=True)
    roles = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=True)
    rate_limit_per_minute = models.PositiveIntegerField(null=True, blank=True, help_text="Overrides the service default when set.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return self.key_id

    # DRF treats request.user as authenticated through this attribute.
    is_authenticated = True
    is_anonymous = False

    def has_role(self, role: str) -> bool:
        return role in (self.roles or [])


class IdempotencyRecord(models.Model):
    """The stored outcome of a mutating request, keyed by (API key, x-request-id).

    Written in the same database transaction as the request's own effects, so a request
    that crashed leaves no record and may be retried, and one that committed is replayed
    from here, never run twice (docs/api.md, Idempotency).
    """

    api_key = models.ForeignKey("tenancy.ApiKey", on_delete=models.CASCADE, related_name="+")
    request_id = models.UUIDField()
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=300)
    body_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True)
    response_bytes = models.BinaryField(null=True)  # the rendered body, replayed byte for byte
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "request_id"], name="idempotency_unique_key_request", violation_error_message="This x-request-id was already used with this API key."),
        ]
