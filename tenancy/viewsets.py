"""TenantScopedViewSet: the one door every API request walks through.

It authenticates (DRF), resolves the acting tenant (the key's organization, or the one
named by tenancyConfig.overrideOrganizationExternalId for keys with
PLATFORM_CROSS_TENANT_ACCESS), resolves the cluster, and owns get_queryset so every read
is scoped to that tenant. Subclasses narrow it in ``scoped_queryset()`` and may not
override ``get_queryset`` or ``get_permissions`` (docs/style.md, "One tenant door"). A view cannot forget
the tenant: ``Model.objects`` of a tenant-owned model refuses every query without one
(tenancy/scoping.py), so reads go through ``get_queryset()`` (bulk pages, fetches by id)
or the lookup resolvers and selectors, which take the tenant. A mutation's view method
starts with ``self.operation(Input)``: the validated body and the operation's context
(tenancy/context.py), which its service takes and hands down to the engine.
"""

from __future__ import annotations

from rest_framework import viewsets

from ledger_project.api.clusters import cluster_from_request
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.permissions import require_role


def tenant_from_request(request):
    """The organization a request acts for."""
    from tenancy.roles import Role
    from tenancy.selectors import tenant_get_by_external_id

    api_key = request.user
    data = request.data if isinstance(request.data, dict) else {}
    tenancy_config = data.get("tenancyConfig")
    if tenancy_config is None:
        return api_key.organization
    if not isinstance(tenancy_config, dict):
        raise LedgerError("tenancyConfig must be an object.", field="tenancyConfig", code="INVALID_TYPE")
    override = tenancy_config.get("overrideOrganizationExternalId")
    if override in (None, ""):
        return api_key.organization
    if not isinstance(override, str):
        raise LedgerError("overrideOrganizationExternalId must be a string.", field="tenancyConfig.overrideOrganizationExternalId", code="INVALID_TYPE")
    if override == api_key.organization.external_id:
        return api_key.organization
    require_role(api_key, Role.PLATFORM_CROSS_TENANT_ACCESS, field="tenancyConfig.overrideOrganizationExternalId", why="act for another organization")
    return tenant_get_by_external_id(external_id=override)


class TenantScopedViewSet(viewsets.ViewSet):
    #: set by subclasses that list or fetch a model; the manager must offer for_tenant()
    model = None
    #: whether the endpoint addresses a cluster (svmCluster / chainClusterId)
    uses_cluster = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("get_queryset", "get_permissions", "get_authenticators"):
            if name in cls.__dict__:
                raise TypeError(f"{cls.__name__} may not override {name}: narrow scoped_queryset() instead.")

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.api_key = request.user
        self.tenant = tenant_from_request(request)
        self.cluster = cluster_from_request(request) if self.uses_cluster else None

    def operation(self, input_serializer) -> tuple[OperationContext, dict]:
        """The request's body validated by ``input_serializer``, and the operation's context
        (tenancy/context.py): this door's tenant, cluster and acting key, the body's
        svmTransactionConfig as validated, the request's x-request-id."""
        body = validated(input_serializer, self.request)
        context = OperationContext(
            tenant=self.tenant, cluster=self.cluster, api_key=self.api_key,
            svm_config=body.get("svmTransactionConfig"), request_id=self.request.client_request_id,
        )
        return context, body

    def get_queryset(self):
        """The acting tenant's own records of ``model``, narrowed by ``scoped_queryset()``."""
        from tenancy.scoping import UnscopedQueryError, scoped_tenant

        if self.model is None:
            raise TypeError(f"{type(self).__name__} has no model")
        queryset = self.scoped_queryset(self.model.objects.for_tenant(self.tenant))
        # scoped_queryset() narrows; it may not widen to another tenant, to shared records or
        # to every row: the tag and the WHERE must both still hold the tenant's own filter.
        try:
            tenant = scoped_tenant(queryset, own=True)
        except UnscopedQueryError as exc:
            raise UnscopedQueryError(f"{type(self).__name__}.scoped_queryset() must narrow the queryset it is given ({exc})") from exc
        if tenant != self.tenant:
            raise UnscopedQueryError(f"{type(self).__name__}.scoped_queryset() must narrow the queryset it is given")
        return queryset

    def scoped_queryset(self, queryset):
        return queryset
