"""Debit limits of wallet accounts (spec, Limits 1-2).

Entries: ``{destinationType: OFF_PLATFORM | NON_MANAGED | MANAGED, limitType:
PER_TRANSACTION | DURATION, maxAmountWithoutApproval: integer base units or null
(unlimited), durationHours: integer (DURATION only, default 24)}``. A provided array
replaces the defaults of its kind entirely; the other kind keeps its own. Amounts are base
units: lamports for network currency, token base units for tokens. The spec's default
"1" for NON_MANAGED per transaction is read as 1 SOL (10^9 lamports).
"""

from __future__ import annotations

from tenancy.scoping import cross_tenant_aggregate

from .models import WALLET_TYPES

LAMPORTS_PER_SOL = 10**9

DEFAULT_NETWORK_CURRENCY_LIMITS = (
    {"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 0, "durationHours": None},
    {"destinationType": "OFF_PLATFORM", "limitType": "DURATION", "maxAmountWithoutApproval": 0, "durationHours": 24},
    {"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 1 * LAMPORTS_PER_SOL, "durationHours": None},
    {"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
    {"destinationType": "MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": None, "durationHours": None},
    {"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
)
# Token-level defaults belong to positions (spec: "defined under Initialize Position").
DEFAULT_TOKEN_LIMITS: tuple = ()


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


def effective_limits(account, kind: str) -> list[dict]:
    """The limits enforced for ``kind`` ("networkCurrency" or "token")."""
    if account.type not in WALLET_TYPES:
        return []
    configured = account.network_currency_debit_limits if kind == "networkCurrency" else account.token_debit_limits
    if configured is not None:
        return list(configured)
    return [dict(e) for e in (DEFAULT_NETWORK_CURRENCY_LIMITS if kind == "networkCurrency" else DEFAULT_TOKEN_LIMITS)]


def network_debit_check(account, *, api_key, lamports: int, destination_type: str, field: str) -> None:
    """Refuse a network-currency debit of ``account`` the API key may not make or its
    limits do not allow without approval (403 DEBIT_NOT_ALLOWED / DEBIT_LIMIT_EXCEEDED).

    ``networkCurrencyDebitApiKeys``, when not empty, lists the API keys (key id or name)
    that may debit the account. DURATION limits count what the account already funded
    (``effects.funding``) within the window; call again under the account's row lock so
    two concurrent debits cannot both pass."""
    from datetime import timedelta

    from django.utils import timezone

    from ledger_project.api.errors import ForbiddenError

    allowed = account.network_currency_debit_api_keys or []
    if allowed and api_key is not None and api_key.key_id not in allowed and (not api_key.name or api_key.name not in allowed):
        raise ForbiddenError("This API key is not in the account's networkCurrencyDebitApiKeys.", field=field, code="DEBIT_NOT_ALLOWED")
    for entry in effective_limits(account, "networkCurrency"):
        maximum = entry.get("maxAmountWithoutApproval")
        if entry["destinationType"] != destination_type or maximum is None:
            continue
        spent = 0
        if entry["limitType"] == "DURATION":
            spent = _funded_since(account, timezone.now() - timedelta(hours=entry.get("durationHours") or 24))
        if spent + lamports > int(maximum):
            raise ForbiddenError(
                f"Funding {lamports} lamports from this account exceeds its {entry['limitType']} networkCurrencyDebitLimits for {destination_type} destinations ({maximum}).",
                field=field, code="DEBIT_LIMIT_EXCEEDED",
            )


@cross_tenant_aggregate  # a shared account funds for other tenants too: its limits count every tenant's debits
def _funded_since(account, since) -> int:
    """Lamports ``account`` funded since ``since`` (transactions not ended unexecuted)."""
    from transactions.models import Transaction, TransactionStatus

    rows = Transaction.unscoped.filter(cluster=account.cluster, created_at__gte=since, effects__funding__source=account.address).exclude(status__in=[TransactionStatus.FAILED, TransactionStatus.EXPIRED, TransactionStatus.CANCELLED])
    return sum(int((effects or {}).get("funding", {}).get("lamports") or 0) for effects in rows.values_list("effects", flat=True))
