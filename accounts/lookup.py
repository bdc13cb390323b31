"""The Lookup resolver: one answer, for every area, to "which account does this name?"

Rules (docs/accounts.md, Lookups):
- A lookup names a record by ``onchainId``, ``offchainId`` and/or ``offchainReferences``
  (``alId``, ``code``, ``accountNumber`` with optional ``organizationExternalId``,
  narrowed by ``type``). Every field given must match the same record; fields naming
  different records → 404 ``CONFLICTING_LOOKUP``.
- It searches the acting tenant's records of the request's cluster. With
  ``otherTenantOrganizationExternalId`` it searches that organization's records shared
  across tenants instead; shared records are never writable by others.
- Nothing found → 404 ``NOT_FOUND`` (another tenant's unshared record is indistinguishable
  from a missing one). With ``offPlatform: true`` and an ``onchainId``, where the operation
  allows an off-platform address, an unknown address resolves to ``OffPlatform``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import F, QuerySet

from ledger_project.api.errors import LedgerError, NotFoundError
from ledger_project.statements import Statement
from tenancy.scoping import require_tenant
from transactions.models import MessageLifetime, NonceAccount

from .models import Account, AccountType

if TYPE_CHECKING:
    from transactions.services import TxConfig


@dataclass(frozen=True)
class OffPlatform:
    """An address the service does not manage (lookup with offPlatform: true)."""

    address: str


def _references_filter(refs: dict, field: str) -> dict:
    filters: dict = {}
    if refs.get("alId"):
        filters["al_id"] = refs["alId"]
    if refs.get("code"):
        filters["code"] = refs["code"]
    if refs.get("accountNumber"):
        filters["account_number"] = refs["accountNumber"]
        if refs.get("organizationExternalId"):
            filters["organization_external_id"] = refs["organizationExternalId"]
    if not filters:
        raise LedgerError("offchainReferences must name alId, code or accountNumber to find a record.", field=f"{field}.offchainReferences", code="INVALID_LOOKUP")
    if refs.get("type"):
        filters["type"] = refs["type"]
    return filters


def lookup_scope(model, tenant, cluster: str, lookup: dict, field: str, writable: bool) -> QuerySet:
    """Where a lookup searches, for any tenant-owned model with shared_across_tenants: the
    acting tenant's records (and records shared with it, for reads), or another
    organization's shared records with otherTenantOrganizationExternalId (never writable).
    Always through model.objects.for_tenant()/visible_to(): never without the tenant."""
    require_tenant(tenant, "lookup_scope()")
    other = lookup.get("otherTenantOrganizationExternalId")
    if other and other != tenant.external_id:
        if writable:
            raise LedgerError("Records of another organization cannot be changed or used to sign.", field=f"{field}.otherTenantOrganizationExternalId", code="NOT_WRITABLE")
        return model.objects.visible_to(tenant).filter(tenant__external_id=other, shared_across_tenants=True, cluster=cluster)
    queryset = model.objects.for_tenant(tenant) if writable else model.objects.visible_to(tenant)
    return queryset.filter(cluster=cluster)


def single_match(matches: list[tuple[str, object | None]], field: str):
    """The one record every field of a lookup names (None when none names any); 400
    CONFLICTING_LOOKUP when they name different records or one names none: no record
    matches every field, so it is a 404 like a missing one (docs/errors.md)."""
    records = {m.pk for _, m in matches if m is not None}
    if len(records) > 1:
        raise NotFoundError("No record matches every field of the lookup: they name different records.", field=field, code="CONFLICTING_LOOKUP")
    if records and any(m is None for _, m in matches):
        missing = next(name for name, m in matches if m is None)
        raise NotFoundError(f"No record matches every field of the lookup: its {missing} does not match the record its other fields name.", field=f"{field}.{missing}", code="CONFLICTING_LOOKUP")
    return next((m for _, m in matches if m is not None), None)


def for_display(queryset: QuerySet) -> QuerySet:
    """What responses show of related rows, as columns of the same query: the owner's
    external id and the two transactions' ids (never whole Transaction rows)."""
    return queryset.annotate(
        tenant_external_id=F("tenant__external_id"),
        last_tx_signature=F("last_transaction__onchain_id"),
        last_tx_offchain=F("last_transaction__offchain_id"),
        creation_tx_signature=F("creation_transaction__onchain_id"),
        creation_tx_offchain=F("creation_transaction__offchain_id"),
    )


_LOOKUP = Statement("accounts.lookup")


def resolve_account(tenant, cluster: str, lookup: dict | None, *, field: str, writable: bool = False, allow_off_platform: bool = False, display: bool = False) -> Account | OffPlatform:
    if lookup is None:
        raise LedgerError("A lookup is required.", field=field, code="REQUIRED")
    onchain_id, offchain_id, refs = lookup.get("onchainId"), lookup.get("offchainId"), lookup.get("offchainReferences")
    if not (onchain_id or offchain_id or refs):
        raise LedgerError("A lookup needs onchainId, offchainId or offchainReferences.", field=field, code="INVALID_LOOKUP")
    queryset = lookup_scope(Account, tenant, cluster, lookup, field, writable).order_by()
    if display:  # responses never need the key row
        queryset = for_display(queryset)
    else:
        queryset = queryset.select_related("managed_key")
    matches: list[tuple[str, Account | None]] = []
    if offchain_id:
        # Unique: no ORDER BY (.first() would add one, and an ordered query costs Django a
        # hash of every selected column to compile); compiled once (_LOOKUP).
        matches.append(("offchainId", next(iter(_LOOKUP.fetch(queryset.filter(offchain_id=offchain_id)[:1])), None)))
    if onchain_id:
        # Own records first: a shared record of another tenant may carry the same address.
        own = _LOOKUP.fetch(queryset.filter(address=onchain_id)[:2])
        own.sort(key=lambda a: a.tenant_id != tenant.pk)
        matches.append(("onchainId", own[0] if own else None))
    if refs:
        found = _LOOKUP.fetch(queryset.filter(**_references_filter(refs, field))[:2])
        if len(found) > 1:
            raise LedgerError("offchainReferences match more than one record; add type or organizationExternalId.", field=f"{field}.offchainReferences", code="AMBIGUOUS_LOOKUP")
        matches.append(("offchainReferences", found[0] if found else None))

    account = single_match(matches, field)
    if account is None:
        if lookup.get("offPlatform") and onchain_id and not offchain_id and not refs:
            if not allow_off_platform:
                raise LedgerError("An off-platform address is not allowed here.", field=f"{field}.offPlatform", code="OFF_PLATFORM_NOT_ALLOWED")
            return OffPlatform(onchain_id)
        raise NotFoundError("No such account.", field=field)
    return account


_DISPLAY_SQL: dict[tuple[str, str], str] = {}


def _display_sql(key: str) -> str:
    """SQL of the display lookup by one identifier, built once per process: the ORM would
    compile the same four-table query on every request (~1 ms of a ~3 ms request)."""
    from django.db import connection

    cached = _DISPLAY_SQL.get((connection.vendor, key))
    if cached is None:
        q = connection.ops.quote_name
        a, t, x = Account._meta.db_table, "tenancy_tenantorganization", "transactions_transaction"
        columns = ", ".join(f"a.{q(f.column)}" for f in Account._meta.concrete_fields)
        column = q(Account._meta.get_field(key).column)
        cached = (
            f"SELECT {columns}, t.{q('external_id')} AS tenant_external_id, "
            f"lt.{q('onchain_id')} AS last_tx_signature, lt.{q('offchain_id')} AS last_tx_offchain, "
            f"ct.{q('onchain_id')} AS creation_tx_signature, ct.{q('offchain_id')} AS creation_tx_offchain "
            f"FROM {q(a)} a JOIN {q(t)} t ON t.{q('id')} = a.{q('tenant_id')} "
            f"LEFT JOIN {q(x)} lt ON lt.{q('id')} = a.{q('last_transaction_id')} "
            f"LEFT JOIN {q(x)} ct ON ct.{q('id')} = a.{q('creation_transaction_id')} "
            f"WHERE a.{column} = %s AND a.{q('cluster')} = %s AND (a.{q('tenant_id')} = %s OR a.{q('shared_across_tenants')}) "
            f"ORDER BY CASE WHEN a.{q('tenant_id')} = %s THEN 0 ELSE 1 END LIMIT 1"
        )
        _DISPLAY_SQL[(connection.vendor, key)] = cached
    return cached


_DISPLAY_EXTRA = ("tenant_external_id", "last_tx_signature", "last_tx_offchain", "creation_tx_signature", "creation_tx_offchain")
_DISPLAY_CONVERTERS: dict[str, tuple] = {}


def _display_converters(connection) -> tuple:
    """Per database vendor, once: the attnames of Account's columns and, for every column
    of the display query that needs one, the converters Django itself would apply."""
    cached = _DISPLAY_CONVERTERS.get(connection.vendor)
    if cached is None:
        from django.db.models.expressions import Col

        from tenancy.models import TenantOrganization
        from transactions.models import Transaction

        fields = list(Account._meta.concrete_fields)
        tx_id, tx_offchain = Transaction._meta.get_field("onchain_id"), Transaction._meta.get_field("offchain_id")
        extra = [TenantOrganization._meta.get_field("external_id"), tx_id, tx_offchain, tx_id, tx_offchain]
        converters = []
        for index, field in enumerate(fields + extra):
            column = Col("a", field)
            functions = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if functions:
                converters.append((index, functions, column))
        cached = _DISPLAY_CONVERTERS[connection.vendor] = ([f.attname for f in fields], converters)
    return cached


def display_account(tenant, cluster: str, lookup: dict, *, field: str):
    """The account a read-only lookup names, with the related ids responses show.

    Single-identifier lookups (the common case) use one precompiled query with the same
    rules as resolve_account (own record before a shared one), read through a bare cursor
    with the converters Django would apply (a RawQuerySet re-derived them on every call);
    anything else goes through resolve_account."""
    from django.db import connection

    require_tenant(tenant, "display_account()")  # the raw SQL binds tenant.pk
    keys = {k for k, v in lookup.items() if v not in (None, "", False)}
    if keys == {"onchainId"} or keys == {"offchainId"}:
        name, column = ("address", "onchainId") if keys == {"onchainId"} else ("offchain_id", "offchainId")
        value = Account._meta.get_field(name).get_db_prep_value(lookup[column], connection)
        with connection.cursor() as cursor:
            cursor.execute(_display_sql(name), [value, cluster, tenant.pk, tenant.pk])
            row = cursor.fetchone()
        if row is None:
            raise NotFoundError("No such account.", field=field)
        attnames, converters = _display_converters(connection)
        values = list(row)
        for index, functions, expression in converters:
            for function in functions:
                values[index] = function(values[index], expression, connection)
        account = Account.from_db(connection.alias, attnames, values[: len(attnames)])
        for attribute, extra in zip(_DISPLAY_EXTRA, values[len(attnames):]):
            setattr(account, attribute, extra)
        return account
    return resolve_account(tenant, cluster, lookup, field=field, display=True)


def resolve_own_account(tenant, cluster: str, lookup: dict | None, *, field: str) -> Account:
    """An account of the acting tenant itself (for changes and signing)."""
    account = resolve_account(tenant, cluster, lookup, field=field, writable=True)
    assert isinstance(account, Account)
    return account


# --- durable nonce accounts (accounts/nonces.py creates them) ------------------------------

NAMED_FIELD = "svmTransactionConfig.durableNonceAccount"


def resolve_nonce_account(tenant, cluster: str, lookup: dict, *, field: str) -> Account:
    """The acting tenant's own durable nonce account a lookup names (with its ``nonce``
    row). Anything else — no such account, another tenant's, an account of another type —
    is 404 NOT_FOUND, one answer for all (docs/accounts.md, Lookups)."""
    try:
        account = resolve_account(tenant, cluster, lookup, field=field, writable=True)
    except NotFoundError as exc:
        if exc.code != "NOT_FOUND":
            raise  # CONFLICTING_LOOKUP: the lookup's own fields disagree
        account = None
    if account is None or account.type != AccountType.NONCE or not NonceAccount.objects.filter(account=account).exists():
        raise NotFoundError("No such durable nonce account.", field=field)
    return account


def named_nonce_config(tenant, cluster: str, data: dict, config: TxConfig) -> TxConfig:
    """svmTransactionConfig.durableNonceAccount (our extension of the spec's SVM
    transaction config): the tenant's nonce account the transaction must use. It goes with
    messageLifetimeStrategy DURABLE_NONCE (else 400 CONFLICTING_FIELDS); whether it is free
    is decided when it is leased (transactions.nonce_pool.nonce_lease)."""
    lookup = data.get("durableNonceAccount")
    if not lookup:
        return config
    if data.get("messageLifetimeStrategy") != MessageLifetime.DURABLE_NONCE:
        raise LedgerError("durableNonceAccount goes with messageLifetimeStrategy DURABLE_NONCE.", field=NAMED_FIELD, code="CONFLICTING_FIELDS")
    account = resolve_nonce_account(tenant, cluster, lookup, field=NAMED_FIELD)
    return dataclasses.replace(config, nonce_account=NonceAccount.objects.values_list("pk", flat=True).get(account=account))
