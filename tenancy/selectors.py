"""Reads for tenants."""

from __future__ import annotations

from ledger_project.api.errors import NotFoundError

from .models import TenantOrganization


def tenant_get_by_external_id(*, external_id: str) -> TenantOrganization:
    tenant = TenantOrganization.objects.filter(external_id=external_id, is_active=True).first()
    if tenant is None:
        raise NotFoundError(f"No organization {external_id!r}.", field="tenancyConfig.overrideOrganizationExternalId", code="ORGANIZATION_NOT_FOUND")
    return tenant
