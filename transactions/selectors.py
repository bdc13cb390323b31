"""Reads of transactions, always scoped to a tenant."""

from __future__ import annotations

import re
from types import SimpleNamespace

from django.db.models import F, Q, QuerySet
from django.db.models.expressions import RawSQL

from ledger_project.api.errors import LedgerError, NotFoundError
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant

from .models import Transaction, TransactionSigner


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


# --- Fetch Transaction Details and Fetch Transactions (docs/transactions.md) ----------------

#: A held transaction's signature is not disclosed (TransactionResultOutput.get_onchainId):
#: a query must not find it either, so onchainId reads as null on those rows.
_SIGNATURE_SHOWN = Q(approval_required=False)


_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]{32,44}")


def _signed_by(condition: Q) -> Q:
    """The transactions one of whose signers matches ``condition`` (on the signer's address).

    A subquery, not a join: a transaction with two matching signers is listed once. The
    addresses go into its SQL as literals, not parameters: the pages run as prepared
    statements (server-side binding), and after a few executions PostgreSQL may switch to
    a generic plan, which estimates *any* address as the average one — a nested loop over
    every signer row, 225 ms at 100,000 transactions when the address is the platform fee
    payer (on nearly every transaction) instead of 0.6 ms. With the literal, each address
    has its own statement and the planner its statistics. Safe: the filter accepted only
    base58 addresses (ONCHAIN_ADDRESS_ID), and anything else stays a parameter."""
    subquery = TransactionSigner.objects.filter(condition).values("transaction_id")
    sql, params = subquery.query.sql_with_params()
    if params and all(isinstance(p, str) and _BASE58.fullmatch(p) for p in params) and sql.count("%s") == len(params):
        return Q(pk__in=RawSQL(sql % tuple(f"'{p}'" for p in params), ()))
    return Q(pk__in=subquery)


#: Fetch Transactions fieldNames (docs/query.md, "Fetch Transactions").
TRANSACTION_QUERY = QuerySpec(
    fields={
        "status": QueryField("TEXT", "status"),
        "operation": QueryField("TEXT", "operation"),
        "txnTimestamp": QueryField("TIMESTAMP", "txn_timestamp"),
        "confirmedAt": QueryField("TIMESTAMP", "confirmed_at", nullable=True),
        # A signature (64 bytes), not an address: TEXT.
        "onchainId": QueryField("TEXT", "onchain_id", nullable=True, guard=_SIGNATURE_SHOWN),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "signer": QueryField("ONCHAIN_ADDRESS_ID", "address", sortable=False, related=_signed_by),
        "feePayer": QueryField("ONCHAIN_ADDRESS_ID", "fee_payer"),
        "cluster": QueryField("TEXT", "cluster"),
        "createdByKey": QueryField("TEXT", "created_by_key__key_id", nullable=True),
    },
    default_sort=(("txnTimestamp", "DESC"),),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
)

#: Columns each detail level renders (transactions/details.py), read as rows, not models.
RESULT_COLUMNS = ("offchain_id", "status", "onchain_id", "approval_required", "confirmations_count", "message", "error_message", "txn_timestamp")
DETAIL_COLUMNS = RESULT_COLUMNS + (
    "cluster", "operation", "effects", "created_by_key_name", "version", "lifetime", "blockhash", "last_valid_block_height", "nonce_account",
    "fee_payer", "required_signers", "signatures", "commitment", "slot", "error", "submitted_at", "confirmed_at", "finalized_at",
    "fee", "compute_units_consumed", "log_messages", "block_time", "loaded_addresses",
)
IDENTIFIER_COLUMNS = ("offchain_id", "onchain_id", "approval_required")
COLUMNS = {"detailed": DETAIL_COLUMNS, "compact": RESULT_COLUMNS, "identifiers": IDENTIFIER_COLUMNS}


def for_details(queryset: QuerySet) -> QuerySet:
    """The creating API key's public id as a column of the same query."""
    return queryset.annotate(created_by_key_name=F("created_by_key__key_id"))


def transaction_details_get(*, queryset: QuerySet, onchain_id: str | None = None, offchain_id=None) -> Transaction:
    return transaction_get(queryset=for_details(queryset), onchain_id=onchain_id, offchain_id=offchain_id)


def transaction_list(*, queryset: QuerySet, item_query: dict | None, level: str) -> tuple[list[SimpleNamespace], int]:
    """A page of ``queryset`` (the view's get_queryset(): the tenant's transactions of every
    cluster) and the count of all matches, as rows holding the columns ``level`` renders."""
    scoped_tenant(queryset)
    columns = COLUMNS.get(level)
    if columns is None:
        raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
    page, count = apply_item_query(queryset, item_query, TRANSACTION_QUERY, present=for_details if level == "detailed" else None)
    return [SimpleNamespace(**row) for row in page.values(*columns)], count
