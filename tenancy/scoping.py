"""Tenant scoping for every tenant-owned model (docs/style.md, "One tenant door").

Every tenant-owned model subclasses ``TenantOwnedModel`` and so gets two managers:

- ``objects``: the API's manager. It cannot be queried without a tenant: ``all()``,
  ``filter()``, ``get()``, ``create()``, ``count()`` ... raise ``UnscopedQueryError``; it offers
  only ``for_tenant(tenant)`` (the tenant's own records: reads and writes) and
  ``visible_to(tenant)`` (plus records other tenants share across tenants: read-only).
  Views reach it through ``TenantScopedViewSet.get_queryset()`` / ``scoped_queryset()`` or
  the lookup resolvers and selectors, which take the tenant.
- ``unscoped``: every row, for code that acts for no tenant or for a record already
  resolved through a scoped door — workers, effects, reconciliation, the admin,
  management commands. Declared first, so it is Django's
  default manager (admin, related managers, ``validate_unique``, dumpdata) and the base
  manager stays plain. ``git grep -n "\\.unscoped\\b"`` lists every unscoped use. In
  request-path modules (views, selectors, lookups, serializers, renderers, services,
  limits, locks, webhooks, ledger_project/api) only functions marked ``@worker_only`` or
  ``@cross_tenant_aggregate`` may use it.

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


def worker_only(function):
    """Mark a function of a request-path module (services, locks, limits, ...) as called
    only by workers, reconciliation, the admin or management commands — never by a request —
    so it may use ``Model.unscoped``; tests/test_tenancy_scoping.py refuses ``.unscoped``
    anywhere else in those modules. Say why in a comment next to it."""
    function.worker_only = True
    return function


def cross_tenant_aggregate(function):
    """Mark a function of a request-path module that reads other tenants' rows only to
    return an aggregate the caller never sees row by row (e.g. what a shared account funded
    for every tenant, which its debit limits count), so it may use ``Model.unscoped``. Say
    why in a comment next to it; keep the function small and its result a number."""
    function.cross_tenant_aggregate = True
    return function


def scoped_tenant(queryset, *, own: bool = False):
    """The tenant ``queryset`` was scoped to by ``for_tenant()``/``visible_to()``; selectors
    that take a queryset call it so an unscoped one cannot slip through. Both the tag and the
    query's WHERE must say so: a queryset combined with an unscoped one (``|``, ``^``,
    ``union``) loses the tag, and a WHERE without the tenant filter is refused whatever the
    tag says. ``own=True`` accepts only the tenant's own rows (``for_tenant``), not
    ``visible_to``'s shared ones."""
    tenant = getattr(queryset, "scoped_tenant", None)
    if tenant is None:
        raise UnscopedQueryError("this selector needs a queryset scoped by for_tenant(tenant) or visible_to(tenant)")
    if own and getattr(queryset, "scoped_shared", False):
        raise UnscopedQueryError("this needs the tenant's own records (for_tenant(tenant)), not visible_to(tenant)")
    if not _query_scoped_to(queryset.query, tenant.pk, own=own):
        raise UnscopedQueryError("this queryset's WHERE does not restrict it to its tenant")
    return tenant


def _tenant_lookup(node, query, tenant_pk) -> bool:
    lhs = getattr(node, "lhs", None)
    return (
        getattr(node, "lookup_name", None) == "exact"
        and getattr(lhs, "alias", None) == query.base_table
        and getattr(lhs, "target", None) == query.model._meta.get_field("tenant")
        and node.rhs == tenant_pk
    )


def _shared_lookup(node, query) -> bool:
    lhs = getattr(node, "lhs", None)
    return (
        getattr(node, "lookup_name", None) == "exact"
        and getattr(lhs, "alias", None) == query.base_table
        and getattr(getattr(lhs, "target", None), "name", None) == "shared_across_tenants"
        and node.rhs is True
    )


def _where_scoped_to(node, query, tenant_pk, own) -> bool:
    """Whether every row matching ``node`` is the tenant's (or, unless ``own``, shared): a
    ``tenant = pk`` term (or ``shared_across_tenants = true``), a conjunction holding one, or a
    disjunction (OR/XOR) of such terms only. Anything negated or unrecognised is not."""
    if _tenant_lookup(node, query, tenant_pk):
        return True
    if not own and _shared_lookup(node, query):
        return True
    children = getattr(node, "children", None)
    if not children or node.negated:
        return False
    parts = [_where_scoped_to(child, query, tenant_pk, own) for child in children]
    return any(parts) if node.connector == "AND" else all(parts)


def _query_scoped_to(query, tenant_pk, *, own) -> bool:
    """Whether every row ``query`` can return belongs to the tenant (or, unless ``own``, is
    shared): read from the WHERE (and, for union/intersection/difference, from the combined
    queries, as the outer WHERE is not compiled then)."""
    if query.combinator:
        parts = [_query_scoped_to(q, tenant_pk, own=own) for q in query.combined_queries]
        if query.combinator == "intersection":
            return any(parts)
        if query.combinator == "difference":
            return parts[0]
        return all(parts)
    return _where_scoped_to(query.where, query, tenant_pk, own)


def _combined_scope(kind, operands):
    """(tenant, shared) of a combination of querysets: a union-like one (``|``, ``^``,
    ``union``) stays scoped only when every operand is scoped to the same tenant; an
    intersection-like one (``&``, ``intersection``) when the scoped operands agree; a
    difference keeps its first operand's scope."""
    scopes = [(getattr(q, "scoped_tenant", None), getattr(q, "scoped_shared", False)) for q in operands]
    if kind == "difference":
        return scopes[0]
    tagged = [(t, shared) for t, shared in scopes if t is not None]
    if not tagged or len({t.pk for t, _ in tagged}) != 1:
        return None, False
    if kind == "intersection":
        return tagged[0][0], all(shared for _, shared in tagged)
    if len(tagged) != len(scopes):  # union-like with an unscoped operand
        return None, False
    return tagged[0][0], any(shared for _, shared in tagged)


class TenantOwnedQuerySet(models.QuerySet):
    #: the tenant for_tenant()/visible_to() scoped this queryset to; None when unscoped
    scoped_tenant = None
    #: whether visible_to() (own plus shared records) rather than for_tenant() scoped it
    scoped_shared = False

    def _clone(self):
        clone = super()._clone()
        clone.scoped_tenant = self.scoped_tenant
        clone.scoped_shared = self.scoped_shared
        return clone

    def _rescope(self, result, kind, other):
        # Django returns an operand itself when the other is empty (none()): leave it as it is.
        if isinstance(result, TenantOwnedQuerySet) and result is not self and result is not other:
            result.scoped_tenant, result.scoped_shared = _combined_scope(kind, [self, other])
        return result

    def __and__(self, other):
        return self._rescope(super().__and__(other), "intersection", other)

    def __or__(self, other):
        return self._rescope(super().__or__(other), "union", other)

    def __xor__(self, other):
        return self._rescope(super().__xor__(other), "union", other)

    def _combinator_query(self, combinator, *other_qs, all=False):
        # union(), intersection(), difference() all come through here.
        clone = super()._combinator_query(combinator, *other_qs, all=all)
        clone.scoped_tenant, clone.scoped_shared = _combined_scope(combinator, [self, *other_qs])
        return clone

    def for_tenant(self, tenant):
        require_tenant(tenant, "for_tenant()")
        queryset = self.filter(tenant=tenant)
        queryset.scoped_tenant, queryset.scoped_shared = tenant, False
        return queryset

    def visible_to(self, tenant):
        require_tenant(tenant, "visible_to()")
        if not any(f.name == "shared_across_tenants" for f in self.model._meta.get_fields()):
            return self.for_tenant(tenant)
        queryset = self.filter(Q(tenant=tenant) | Q(shared_across_tenants=True))
        queryset.scoped_tenant, queryset.scoped_shared = tenant, True
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
