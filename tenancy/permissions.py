"""Permission checks: an API key is present, and it holds the roles an operation needs."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from ledger_project.api.errors import ForbiddenError, NotAuthenticatedError


class HasApiKey(BasePermission):
    def has_permission(self, request, view) -> bool:
        from tenancy.models import ApiKey

        if not isinstance(request.user, ApiKey):
            raise NotAuthenticatedError()
        return True


def require_role(api_key, role: str, *, field: str | None = None, why: str = "") -> None:
    """Raise 403 unless the key holds ``role`` (roles: tenancy.roles.Role)."""
    if not api_key.has_role(role):
        reason = f" to {why}" if why else ""
        raise ForbiddenError(f"This API key needs role {role}{reason}.", field=field, code="MISSING_ROLE")
