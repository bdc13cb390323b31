"""Who pays a transaction's fee, and how much at most (docs/transactions.md, "Who pays the
fee, and how much at most"; docs/custody.md).

Checked where the engine builds every message (``services.transaction_build``), before the
simulation and before any key signs, so the rule holds for every area at once:

- **The platform's fee payer pays** (the request names no ``feePayer``). The prioritization
  fee of the message (price × limit, ``chain.fees``) is at most
  ``LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS``: an explicit ``computeUnitConfig.price`` over
  it is refused (400 PRIORITY_FEE_TOO_HIGH, naming the field; the request may name a
  ``feePayer`` of its own to pay more), an estimated price (``priceEstimate``) is lowered to
  fit. And an organization's platform-paid fees over the last 24 hours, per cluster, stay
  within ``LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS``: each transaction counts its maximum fee
  while it may still land and its ``meta.fee`` once it has; past the budget 429
  PLATFORM_FEE_BUDGET_EXCEEDED with ``Retry-After`` (when enough of the window's fees leave
  it). Operations no API key asked for (the lending keeper, the platform's own) are not
  counted against an organization.
- **An organization's account pays** (``svmTransactionConfig.feePayer``): paying the fee is a
  debit of that account. The rule the accounts area registers (``register_fee_payer_rule``,
  accounts/fee_payer.py) refuses an API key its debit API keys do not name (403
  DEBIT_NOT_ALLOWED) and counts the maximum fee against its networkCurrencyDebitLimits;
  over a limit the transaction is held for approval like any debit, and the fee is recorded
  among the transaction's debits so that later DURATION windows count it.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db.models import BigIntegerField, Case, F, Q, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from chain.fees import MessageFee
from ledger_project.api.errors import LedgerError, RateLimitedError

from .models import Transaction, TransactionStatus

#: The window of the per-organization budget of platform-paid fees.
BUDGET_WINDOW = timedelta(hours=24)
PRICE_FIELD = "svmTransactionConfig.computeUnitConfig.price"


class PriorityFeeTooHigh(LedgerError):
    """400: the platform would pay a prioritization fee above its policy."""

    code = "PRIORITY_FEE_TOO_HIGH"


class PlatformFeeBudgetExceeded(RateLimitedError):
    """429: the organization's platform-paid fees of the last 24 hours are at the budget."""

    code = "PLATFORM_FEE_BUDGET_EXCEEDED"


# ---------------------------------------------------------------------------------------
# The platform pays.


def platform_priority_fee_ceiling() -> int:
    return int(settings.LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS)


def platform_priority_check(fee: MessageFee, *, explicit_price: bool) -> None:
    """Refuse a message whose prioritization fee the platform would pay above the ceiling."""
    ceiling = platform_priority_fee_ceiling()
    if fee.priority_fee <= ceiling:
        return
    # Only an explicit price gets here: the builder keeps an estimate within the ceiling.
    raise PriorityFeeTooHigh(
        f"The platform's fee payer pays at most {ceiling} lamports of prioritization fee a transaction; this "
        f"computeUnitConfig asks for {fee.priority_fee} ({fee.compute_unit_price} micro-lamports × {fee.compute_unit_limit} units). "
        "Lower the price or the limit, or name a feePayer of your own to pay more.",
        field=PRICE_FIELD if explicit_price else "svmTransactionConfig.computeUnitConfig",
    )


def _counted() -> Case:
    """What one platform-paid transaction counts against the budget (lamports)."""
    never_landed = Q(status__in=[TransactionStatus.EXPIRED, TransactionStatus.CANCELLED]) | Q(status=TransactionStatus.FAILED, slot__isnull=True)
    return Case(
        When(fee__isnull=False, then=F("fee")),
        When(never_landed, then=Value(0)),
        default=Coalesce(F("max_fee"), Value(0)),
        output_field=BigIntegerField(),
    )


def _window(tenant, cluster: str):
    since = timezone.now() - BUDGET_WINDOW
    return Transaction.objects.for_tenant(tenant).filter(cluster=cluster, platform_paid=True, txn_timestamp__gte=since)


def platform_fees_spent(tenant, cluster: str) -> int:
    """Lamports of platform-paid fees the organization spent (or may still spend: in flight)
    on ``cluster`` within the last 24 hours, read now."""
    return int(_window(tenant, cluster).aggregate(total=Sum(_counted()))["total"] or 0)


#: (tenant pk, cluster) → (read at, spent then, added by this process since): the budget is
#: read at most every LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS per process, plus what this
#: process recorded meanwhile (docs/capacity.md: the overshoot this allows).
_spent: dict[tuple[int, str], list] = {}
_spent_lock = threading.Lock()


def _spent_now(tenant, cluster: str) -> int:
    key = (tenant.pk, cluster)
    with _spent_lock:
        hit = _spent.get(key)
        if hit is not None and time.monotonic() - hit[0] < settings.LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS:
            return hit[1] + hit[2]
    spent = platform_fees_spent(tenant, cluster)
    with _spent_lock:
        _spent[key] = [time.monotonic(), spent, 0]
    return spent


def platform_fees_by_organization(tenant_ids) -> dict[int, dict[str, dict[str, int]]]:
    """For the admin: tenant pk → cluster → {spent, in_flight, landed, count} of the last 24
    hours' platform-paid transactions (one grouped query)."""
    since = timezone.now() - BUDGET_WINDOW
    landed = Q(fee__isnull=False)
    rows = (
        Transaction.unscoped.filter(tenant_id__in=list(tenant_ids), platform_paid=True, txn_timestamp__gte=since)
        .values("tenant_id", "cluster").order_by()
        .annotate(spent=Sum(_counted()), landed=Sum("fee", filter=landed), in_flight=Sum(_counted(), filter=~landed))
    )
    found: dict[int, dict[str, dict[str, int]]] = {}
    for row in rows:
        found.setdefault(row["tenant_id"], {})[row["cluster"]] = {k: int(row[k] or 0) for k in ("spent", "landed", "in_flight")}
    return found


def platform_fees_noted(tenant, cluster: str, lamports: int) -> None:
    """This process recorded a platform-paid transaction of at most ``lamports``."""
    with _spent_lock:
        hit = _spent.get((tenant.pk, cluster))
        if hit is not None:
            hit[2] += int(lamports)


def platform_fees_cache_clear() -> None:
    with _spent_lock:
        _spent.clear()


def _retry_after(tenant, cluster: str, spent: int, needed: int, budget: int) -> int:
    """Seconds until enough of the window's fees leave it for ``needed`` more to fit."""
    if needed > budget:
        return int(BUDGET_WINDOW.total_seconds())
    now = timezone.now()
    rows = _window(tenant, cluster).annotate(counted=_counted()).order_by("txn_timestamp").values_list("txn_timestamp", "counted")
    for at, counted in rows.iterator():
        spent -= int(counted or 0)
        if spent + needed <= budget:
            return max(1, math.ceil((at + BUDGET_WINDOW - now).total_seconds()))
    return 1


def platform_budget_check(tenant, cluster: str, fee: MessageFee) -> None:
    """429 when the organization's platform-paid fees would pass the budget."""
    budget = settings.LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS
    if budget is None:
        return
    spent = _spent_now(tenant, cluster)
    if spent + fee.total <= int(budget):
        return
    spent = platform_fees_spent(tenant, cluster)  # decide on the database's figure, not the cache's
    if spent + fee.total <= int(budget):
        return
    wait = _retry_after(tenant, cluster, spent, fee.total, int(budget))
    raise PlatformFeeBudgetExceeded(
        wait,
        f"Your organization's fees paid by the platform on this cluster reached {spent} of its {int(budget)} lamports "
        f"for 24 hours (this transaction may cost {fee.total}); retry after {wait} s, or name a feePayer of your own.",
    )


# ---------------------------------------------------------------------------------------
# An organization's account pays.


@dataclass(frozen=True)
class FeeDebit:
    """The fee as a debit of the account that pays it: whether it is held for approval,
    why, and the effects entry (``{kind, source, amount, destinationType, fee: true}``)."""

    held: bool
    reason: str
    entry: dict


#: ``rule(*, tenant, api_key, payer, lamports, field, lock, already) -> FeeDebit | None``,
#: registered by the accounts area; ``payer``: the fee payer's SignerSpec; ``already(entry)``:
#: base units of the same kind, source and destination type that the transaction debits
#: besides the fee. ``lock`` False (the network phase): the debit API keys alone, never held;
#: True (the write phase): keys and limits under the row lock. None: the payer is no
#: recorded account (nothing to check).
_fee_payer_rule: Callable[..., FeeDebit | None] | None = None


def register_fee_payer_rule(rule: Callable[..., FeeDebit | None]) -> None:
    global _fee_payer_rule
    _fee_payer_rule = rule


def fee_payer_debit(*, tenant, api_key, payer, lamports: int, lock: bool = False, already=None) -> FeeDebit | None:
    if _fee_payer_rule is None or tenant is None:
        return None
    return _fee_payer_rule(tenant=tenant, api_key=api_key, payer=payer, lamports=int(lamports), field=payer.field or "svmTransactionConfig.feePayer",
                           lock=lock, already=already)


def debited_besides(effects_data: dict | None, entry: dict) -> int:
    """What ``effects_data`` already debits of ``entry``'s kind, source and destination type."""
    return sum(
        int(d.get("amount") or 0) for d in (effects_data or {}).get("debits") or ()
        if (d.get("kind"), d.get("source"), d.get("destinationType")) == (entry["kind"], entry["source"], entry["destinationType"]) and not d.get("instrument")
    )
