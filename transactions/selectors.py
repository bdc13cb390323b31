"""Reads of transactions, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import QuerySet

from ledger_project.api.errors import LedgerError, NotFoundError
from tenancy.scoping import scoped_tenant

from .models import Transaction


def transaction_get(*, queryset: QuerySet, onchain_id: str | None = None, offchain_id=None) -> Transaction:
    """The transaction ``queryset`` (the view's get_queryset(): the tenant's) holds."""
    scoped_tenant(queryset)
    if offchain_id:
        tx = queryset.filter(offchain_id=offchain_id).first()
        if tx is not None and onchain_id and tx.onchain_id != onchain_id:
            raise NotFoundError("No transaction matches both onchainId and offchainId.", field="itemData.transaction", code="CONFLICTING_LOOKUP")
    else:
        tx = queryset.filter(onchain_id=onchain_id).order_by("-pk").first()
    if tx is None:
        raise NotFoundError("No such transaction.", field="itemData.transaction")
    return tx
