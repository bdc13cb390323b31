"""Spec "Position lookup": ``{position?, owner?, financialInstrument?, mintAuthority?,
freezeAuthority?}`` (docs/positions.md, Lookups).

A position is named by ``position`` (an account lookup of the token account: onchainId,
offchainId — the position's or its account's — or offchainReferences), or by ``owner`` +
``financialInstrument`` (the owner's associated position in that instrument). When both
forms are given they must name the same position (else 404 CONFLICTING_LOOKUP, like any
lookup whose fields disagree). ``mintAuthority``/``freezeAuthority`` name the authority that
signs a mint or a freeze; they never select the position.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import uuid
from dataclasses import dataclass

from django.db.models import Q

from accounts.lookup import OffPlatform, resolve_account, single_match
from accounts.models import Account
from instruments.lookup import resolve_instrument
from instruments.models import FinancialInstrument
from ledger_project.api.errors import LedgerError, NotFoundError
from ledger_project.statements import Statement

from .models import Position, PositionStatus


@dataclass(frozen=True)
class OwnerTarget:
    """A position lookup that names an owner and an instrument but no position yet: where
    an operation may create it (Mint createIfMissing, Transfer destinations)."""

    owner: Account | OffPlatform
    instrument: FinancialInstrument


#: What a resolved position carries: its token account (responses, balances), its owner
#: and the owner's key row (signer, debit limits: a debit signs with it) and its
#: instrument (checks, amounts). Not the instrument's mint account or the in-flight
#: marker's transaction: nothing on the movement path reads them, and each join costs
#: every lookup (a lifecycle check loads the marker when one is set).
POSITION_RELATED = ("account", "owner", "owner__managed_key", "instrument")


def _positions(tenant, cluster: str):
    # No ORDER BY: every lookup below names at most one position (unique offchain ids,
    # one position per address); an ordered query of this width costs Django a hash of
    # each of its 160 selected columns to compile. Compiled once (_LOOKUP), in any case.
    return Position.objects.for_tenant(tenant).filter(cluster=cluster).select_related(*POSITION_RELATED).order_by()


_LOOKUP = Statement("positions.lookup")


def _one(queryset) -> Position | None:
    return next(iter(_LOOKUP.fetch(queryset[:1])), None)


def _position_by_account_lookup(tenant, cluster: str, lookup: dict, field: str) -> Position | None:
    onchain_id, offchain_id, refs = lookup.get("onchainId"), lookup.get("offchainId"), lookup.get("offchainReferences") or {}
    if not (onchain_id or offchain_id or refs):
        raise LedgerError("A lookup needs onchainId, offchainId or offchainReferences.", field=field, code="INVALID_LOOKUP")
    # Positions are never shared across tenants: only the acting tenant's own.
    queryset = _positions(tenant, cluster)
    matches = []
    if offchain_id:
        value = uuid.UUID(str(offchain_id))
        matches.append(("offchainId", _one(queryset.filter(Q(offchain_id=value) | Q(account__offchain_id=value)))))
    if onchain_id:
        matches.append(("onchainId", _one(queryset.filter(address=onchain_id))))
    if refs:
        filters = {}
        for key, column in (("code", "account__code"), ("alId", "account__al_id"), ("accountNumber", "account__account_number")):
            if refs.get(key):
                filters[column] = refs[key]
        if not filters:
            raise LedgerError("offchainReferences must name code, alId or accountNumber to find a position.", field=f"{field}.offchainReferences", code="INVALID_LOOKUP")
        found = list(queryset.filter(**filters)[:2])
        if len(found) > 1:
            raise LedgerError("offchainReferences match more than one position.", field=f"{field}.offchainReferences", code="AMBIGUOUS_LOOKUP")
        matches.append(("offchainReferences", found[0] if found else None))
    return single_match(matches, field)


def _associated(tenant, cluster: str, owner: Account, instrument: FinancialInstrument) -> Position | None:
    # At most one (pos_unique_associated).
    return _one(_positions(tenant, cluster).filter(owner=owner, instrument=instrument, associated=True).exclude(status__in=[PositionStatus.FAILED, PositionStatus.INACTIVE]))


_memo: contextvars.ContextVar[dict | None] = contextvars.ContextVar("positions_lookup_memo", default=None)


@contextlib.contextmanager
def resolution_memo():
    """Within the block, a lookup resolved once is not queried again (a batch payout's
    1,000 items name the same few positions over and over: positions/batches.py). Only
    what resolved is kept: a lookup that fails raises again, with its own item's field.
    Read phase only: the write phase re-reads what it relies on under its locks."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def resolve_position(tenant, cluster: str, lookup: dict | None, *, field: str, allow_missing: bool = False, allow_off_platform_owner: bool = False) -> Position | OwnerTarget:
    """The position a Position lookup names. With ``allow_missing``, an owner +
    instrument lookup whose position does not exist yet resolves to an OwnerTarget (and,
    with ``allow_off_platform_owner``, an owner ``{onchainId, offPlatform: true}`` the
    service does not know)."""
    memo = _memo.get()
    if memo is None:
        return _resolve_position(tenant, cluster, lookup, field=field, allow_missing=allow_missing, allow_off_platform_owner=allow_off_platform_owner)
    key = (tenant.pk, cluster, json.dumps(lookup, sort_keys=True, default=str), allow_missing, allow_off_platform_owner)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _resolve_position(tenant, cluster, lookup, field=field, allow_missing=allow_missing, allow_off_platform_owner=allow_off_platform_owner)
    return found


def _resolve_position(tenant, cluster: str, lookup: dict | None, *, field: str, allow_missing: bool = False, allow_off_platform_owner: bool = False) -> Position | OwnerTarget:
    if not isinstance(lookup, dict) or not any(lookup.get(k) for k in ("position", "owner", "financialInstrument")):
        raise LedgerError("A position lookup needs position, or owner and financialInstrument.", field=field, code="INVALID_LOOKUP")
    by_position = None
    if lookup.get("position"):
        by_position = _position_by_account_lookup(tenant, cluster, lookup["position"], f"{field}.position")
        if by_position is None:
            raise NotFoundError("No such position.", field=f"{field}.position")
    owner_lookup, instrument_lookup = lookup.get("owner"), lookup.get("financialInstrument")
    if not owner_lookup and not instrument_lookup:
        return by_position
    if bool(owner_lookup) != bool(instrument_lookup) and by_position is None:
        missing = "financialInstrument" if owner_lookup else "owner"
        raise LedgerError("Without position, a position lookup needs both owner and financialInstrument.", field=f"{field}.{missing}", code="REQUIRED")
    instrument = resolve_instrument(tenant, cluster, instrument_lookup, field=f"{field}.financialInstrument") if instrument_lookup else None
    owner = resolve_account(tenant, cluster, owner_lookup, field=f"{field}.owner", allow_off_platform=allow_off_platform_owner) if owner_lookup else None
    if by_position is not None:
        if instrument is not None and by_position.instrument_id != instrument.pk:
            raise NotFoundError("No record matches every field of the lookup: the position holds another instrument.", field=f"{field}.financialInstrument", code="CONFLICTING_LOOKUP")
        if owner is not None and (isinstance(owner, OffPlatform) or by_position.owner_id != owner.pk):
            raise NotFoundError("No record matches every field of the lookup: the position has another owner.", field=f"{field}.owner", code="CONFLICTING_LOOKUP")
        return by_position
    found = None if isinstance(owner, OffPlatform) else _associated(tenant, cluster, owner, instrument)
    if found is not None:
        return found
    if allow_missing:
        return OwnerTarget(owner, instrument)
    raise NotFoundError("The owner has no position in this financial instrument.", field=field)


def resolve_own_position(tenant, cluster: str, lookup: dict | None, *, field: str) -> Position:
    found = resolve_position(tenant, cluster, lookup, field=field)
    assert isinstance(found, Position)
    return found
