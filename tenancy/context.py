"""OperationContext: who an operation acts for, handed down from the door to the engine.

The tenant-scoped view base builds one per request (``TenantScopedViewSet.operation``):
the acting tenant and cluster as the door resolved them, the acting API key, the body's
``svmTransactionConfig`` as its serializer validated it and the request's x-request-id.
Services take it as their first argument and the engine reads the acting key from it where
it checks fees and signs (``transactions.services.transaction_build``): a shared key's debit
API keys, the organization's fee budget.

Without a request (workers, the admin, management commands) the caller builds one itself:
``OperationContext.system(tenant=..., cluster=...)`` acts for no API key (``api_key`` None:
the engine then skips the shared-key debit-API-key check and the organization's fee budget,
as it always did without a key), and a worker that acts for a recorded key (a batch's
retries) names it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class OperationContext:
    """The context of one operation (module docstring); immutable."""

    #: the organization the operation acts for (None: the platform's own work)
    tenant: object
    #: the cluster it addresses (None for endpoints without one)
    cluster: str | None
    #: the acting API key; None outside a request
    api_key: object | None = None
    #: the request's svmTransactionConfig as validated (the spec's shape), None when absent
    svm_config: dict | None = None
    #: the request's x-request-id, None when absent
    request_id: uuid.UUID | None = None

    @classmethod
    def system(cls, *, tenant, cluster: str | None, svm_config: dict | None = None) -> OperationContext:
        """Work no request asked for (workers, the admin, management commands): no acting key."""
        return cls(tenant=tenant, cluster=cluster, svm_config=svm_config)
