"""Debit limits of wallet accounts (spec, Limits 1-2): the entries, the network-currency
defaults, and the pieces every debit check shares — the funding path here
(``network_debit_check``), transfers in positions/limits.py (``debit_decision``).

Entries: ``{destinationType: OFF_PLATFORM | NON_MANAGED | MANAGED, limitType:
PER_TRANSACTION | DURATION, maxAmountWithoutApproval: integer base units or null
(unlimited), durationHours: integer (DURATION only, default 24)}``. A provided array
replaces the defaults of its kind entirely (an empty one: no limits of that kind); the other
kind keeps its own. Amounts are base units: lamports for network currency, token base units
for tokens. The spec's default "1" for NON_MANAGED per transaction is read as 1 SOL (10^9
lamports). Token defaults depend on the instrument's decimals: positions/limits.py.

What a DURATION window counts (``debited_within``): every debit recorded in a Transaction's
``effects`` within the window, for that account, kind (and instrument) and destination
type, from the moment it is recorded until it provably does not execute — every status but
FAILED, EXPIRED and CANCELLED, so held (PENDING_APPROVAL) and not yet submitted ones count.
Two shapes are counted: ``effects.debits`` (a list of ``{kind, source, amount,
destinationType, instrument?}``, written by transfers) and ``effects.funding`` (``{source,
lamports, destinationType}``, written by seeds, rent and top-ups: network currency).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from tenancy.roles import api_key_may_debit
from tenancy.scoping import cross_tenant_aggregate

from .models import WALLET_TYPES

LAMPORTS_PER_SOL = 10**9
NETWORK_CURRENCY = "networkCurrency"
TOKEN = "token"
DESTINATION_TYPES = ("OFF_PLATFORM", "NON_MANAGED", "MANAGED")

DEFAULT_NETWORK_CURRENCY_LIMITS = (
    {"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 0, "durationHours": None},
    {"destinationType": "OFF_PLATFORM", "limitType": "DURATION", "maxAmountWithoutApproval": 0, "durationHours": 24},
    {"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 1 * LAMPORTS_PER_SOL, "durationHours": None},
    {"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
    {"destinationType": "MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": None, "durationHours": None},
    {"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
)


def normalize(entries: list[dict]) -> list[dict]:
    return [
        {
            "destinationType": e["destinationType"],
            "limitType": e["limitType"],
            "maxAmountWithoutApproval": e.get("maxAmountWithoutApproval"),
            "durationHours": e.get("durationHours") if e["limitType"] == "DURATION" else None,
        }
        for e in entries
    ]


def effective_limits(account, kind: str) -> list[dict] | None:
    """The limits enforced for ``kind`` ("networkCurrency" or "token") as the account
    response shows them: none for non-wallet types; the configured array; else the
    network-currency defaults. Token defaults are per instrument (positions/limits.py), so
    an account without tokenDebitLimits shows null for them."""
    if account.type not in WALLET_TYPES:
        return []
    configured = account.network_currency_debit_limits if kind == NETWORK_CURRENCY else account.token_debit_limits
    if configured is not None:
        return list(configured)
    return [dict(e) for e in DEFAULT_NETWORK_CURRENCY_LIMITS] if kind == NETWORK_CURRENCY else None


def first_exceeded(entries, *, destination_type: str, amount: int, spent: Callable[[int], int]) -> dict | None:
    """The first of ``entries`` for ``destination_type`` that ``amount`` would exceed
    without approval, or None. PER_TRANSACTION compares the amount; DURATION adds what
    ``spent(hours)`` says was already debited within that many hours. ``spent`` is asked
    only when the amount alone fits a finite maximum, so unlimited and zero maximums (the
    defaults) cost no query."""
    for entry in entries:
        maximum = entry.get("maxAmountWithoutApproval")
        if entry["destinationType"] != destination_type or maximum is None:
            continue
        if amount > int(maximum):
            return entry
        if entry["limitType"] == "DURATION" and spent(int(entry.get("durationHours") or 24)) + amount > int(maximum):
            return entry
    return None


def _debited(effects: dict, *, source: str, kind: str, destination_type: str, instrument: str | None) -> int:
    total = 0
    for debit in effects.get("debits") or ():
        if (debit.get("source") == source and debit.get("kind") == kind and debit.get("destinationType") == destination_type
                and (debit.get("instrument") or None) == instrument):
            total += int(debit.get("amount") or 0)
    funding = effects.get("funding")
    # Funding entries recorded before they named their destination type count for every type.
    if kind == NETWORK_CURRENCY and funding and funding.get("source") == source and funding.get("destinationType", destination_type) == destination_type:
        total += int(funding.get("lamports") or 0)
    return total


@cross_tenant_aggregate  # a shared account is debited for other tenants too: its limits count every tenant's debits
def debited_within(account, *, hours: int, kind: str, destination_type: str, instrument: str | None = None) -> int:
    """Base units ``account`` debited (``kind``; tokens: of mint ``instrument``) to
    ``destination_type`` destinations within the last ``hours`` (see the module docstring).
    Call it again under the account's row lock in the write phase, so two concurrent
    debits cannot both fit the window."""
    from django.db import connection
    from django.db.models import Q
    from django.utils import timezone

    from transactions.models import Transaction, TransactionStatus

    rows = Transaction.unscoped.filter(cluster=account.cluster, txn_timestamp__gte=timezone.now() - timedelta(hours=hours)).exclude(
        status__in=[TransactionStatus.FAILED, TransactionStatus.EXPIRED, TransactionStatus.CANCELLED]
    )
    if not account.shared_across_tenants:
        # Only its own organization can find (and so debit) an account that is not shared.
        rows = rows.filter(tenant_id=account.tenant_id)
    if connection.vendor == "postgresql":  # jsonb containment; SQLite has no JSON contains
        wanted = Q(effects__debits__contains=[{"source": account.address, "kind": kind}])
    else:
        wanted = Q(effects__has_key="debits")
    if kind == NETWORK_CURRENCY:
        wanted |= Q(effects__funding__source=account.address)
    return sum(
        _debited(effects or {}, source=account.address, kind=kind, destination_type=destination_type, instrument=instrument)
        for effects in rows.filter(wanted).values_list("effects", flat=True)
    )


def network_debit_check(account, *, api_key, lamports: int, destination_type: str, field: str) -> None:
    """Refuse a network-currency funding from ``account`` that the API key may not make or
    its limits do not allow without approval (403 DEBIT_NOT_ALLOWED / DEBIT_LIMIT_EXCEEDED:
    account funding has no approval queue). Call again under the account's row lock."""
    from ledger_project.api.errors import ForbiddenError

    if not api_key_may_debit(account.network_currency_debit_api_keys, api_key):
        raise ForbiddenError("This API key is not in the account's networkCurrencyDebitApiKeys.", field=field, code="DEBIT_NOT_ALLOWED")
    if account.type not in WALLET_TYPES:
        return
    exceeded = first_exceeded(
        effective_limits(account, NETWORK_CURRENCY), destination_type=destination_type, amount=lamports,
        spent=lambda hours: debited_within(account, hours=hours, kind=NETWORK_CURRENCY, destination_type=destination_type),
    )
    if exceeded is not None:
        raise ForbiddenError(
            f"Funding {lamports} lamports from this account exceeds its {exceeded['limitType']} networkCurrencyDebitLimits for {destination_type} destinations ({exceeded['maxAmountWithoutApproval']}).",
            field=field, code="DEBIT_LIMIT_EXCEEDED",
        )
