"""Tenant scoping for every tenant-owned model (STYLE.md rule 3).

Every tenant-owned model subclasses ``TenantOwnedModel`` and so gets a manager whose
``for_tenant(tenant)`` is the only way API code reads it. ``visible_to(tenant)`` adds
records other tenants share across tenants (read-only: writes always go through
``for_tenant``).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class TenantOwnedQuerySet(models.QuerySet):
    def for_tenant(self, tenant):
        if tenant is None:
            raise ValueError("for_tenant() needs a tenant: unscoped reads are not allowed")
        return self.filter(tenant=tenant)

    def visible_to(self, tenant):
        if tenant is None:
            raise ValueError("visible_to() needs a tenant: unscoped reads are not allowed")
        if not any(f.name == "shared_across_tenants" for f in self.model._meta.get_fields()):
            return self.for_tenant(tenant)
        return self.filter(Q(tenant=tenant) | Q(shared_across_tenants=True))


class TenantOwnedModel(models.Model):
    """Fields every tenant-owned record has: tenant, cluster, offchain id, times."""

    tenant = models.ForeignKey("tenancy.TenantOrganization", on_delete=models.PROTECT, related_name="+")
    # Not indexed alone: every cluster holds most rows; composite indexes carry it.
    cluster = models.CharField(max_length=40)
    offchain_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Declared first, so it is Django's default manager (admin, related managers): the
    # explicit manager for workers and the admin; ``objects`` is the API's.
    unscoped = TenantOwnedQuerySet.as_manager()
    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        abstract = True
