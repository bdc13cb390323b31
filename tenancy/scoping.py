"""Tenant scoping for every tenant-owned model (STYLE.md rule 3, "Converge (a)").

Every tenant-owned model subclasses ``TenantOwnedModel`` and so gets two managers:

- ``objects``: the API's manager. It cannot be queried without a tenant: ``all()``,
  ``filter()``, ``get()``, ``create()``, ``count()`` ... raise ``UnscopedQueryError``; it offers
  only ``for_tenant(tenant)`` (the tenant's own records: reads and writes) and
  ``visible_to(tenant)`` (plus records other tenants share across tenants: read-only).
  Views reach it through ``TenantScopedViewSet.get_queryset()`` / ``scoped_queryset()`` or
  the lookup resolvers and selectors, which take the tenant.
- ``unscoped``: every row, for code that acts for no tenant or for a record already
  resolved through a scoped door — workers, effects, reconciliation, the admin,
  management commands, row locks by primary key. Declared first, so it is Django's
  default manager (admin, related managers, ``validate_unique``, dumpdata) and the base
  manager stays plain. ``git grep -n "\\.unscoped\\b"`` lists every unscoped use.

Raw SQL fast paths take the tenant as a bound parameter and call ``require_tenant()`` first.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class UnscopedQueryError(RuntimeError):
    """A tenant-owned model was queried without a tenant (a programming error, never input)."""


def require_tenant(tenant, what: str = "this query"):
    """The tenant a scoped read or raw SQL fast path binds; raises when there is none."""
    if tenant is None or getattr(tenant, "pk", None) is None:
        raise UnscopedQueryError(f"{what} needs a tenant: unscoped reads are not allowed")
    return tenant


def scoped_tenant(queryset):
    """The tenant ``queryset`` was scoped to by ``for_tenant()``/``visible_to()``; selectors
    that take a queryset call it so an unscoped one cannot slip through."""
    tenant = getattr(queryset, "scoped_tenant", None)
    if tenant is None:
        raise UnscopedQueryError("this selector needs a queryset scoped by for_tenant(tenant) or visible_to(tenant)")
    return tenant


class TenantOwnedQuerySet(models.QuerySet):
    #: the tenant for_tenant()/visible_to() scoped this queryset to; None when unscoped
    scoped_tenant = None

    def _clone(self):
        clone = super()._clone()
        clone.scoped_tenant = self.scoped_tenant
        return clone

    def for_tenant(self, tenant):
        require_tenant(tenant, "for_tenant()")
        queryset = self.filter(tenant=tenant)
        queryset.scoped_tenant = tenant
        return queryset

    def visible_to(self, tenant):
        require_tenant(tenant, "visible_to()")
        if not any(f.name == "shared_across_tenants" for f in self.model._meta.get_fields()):
            return self.for_tenant(tenant)
        queryset = self.filter(Q(tenant=tenant) | Q(shared_across_tenants=True))
        queryset.scoped_tenant = tenant
        return queryset


class TenantScopedManager(models.Manager):
    """``Model.objects``: nothing but ``for_tenant(tenant)`` and ``visible_to(tenant)``."""

    def _unscoped(self):
        return TenantOwnedQuerySet(model=self.model, using=self._db, hints=self._hints)

    def for_tenant(self, tenant) -> TenantOwnedQuerySet:
        return self._unscoped().for_tenant(tenant)

    def visible_to(self, tenant) -> TenantOwnedQuerySet:
        return self._unscoped().visible_to(tenant)

    def get_queryset(self):
        # Every other manager method (all, filter, get, create, count, update, bulk_create,
        # select_for_update, ...) goes through here.
        name = self.model.__name__ if self.model is not None else "model"
        raise UnscopedQueryError(
            f"{name}.objects cannot be queried without a tenant: use {name}.objects.for_tenant(tenant) / "
            f".visible_to(tenant) (views: TenantScopedViewSet.get_queryset()), or {name}.unscoped in workers and the admin."
        )


class TenantOwnedModel(models.Model):
    """Fields every tenant-owned record has: tenant, cluster, offchain id, times."""

    tenant = models.ForeignKey("tenancy.TenantOrganization", on_delete=models.PROTECT, related_name="+")
    # Not indexed alone: every cluster holds most rows; composite indexes carry it.
    cluster = models.CharField(max_length=40)
    offchain_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Order matters: the first manager declared is the default manager (see the module docstring).
    unscoped = TenantOwnedQuerySet.as_manager()
    objects = TenantScopedManager()

    class Meta:
        abstract = True
