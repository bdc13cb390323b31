"""Debit limits of wallet accounts (spec, Limits 1-2).

Entries: ``{destinationType: OFF_PLATFORM | NON_MANAGED | MANAGED, limitType:
PER_TRANSACTION | DURATION, maxAmountWithoutApproval: integer base units or null
(unlimited), durationHours: integer (DURATION only, default 24)}``. A provided array
replaces the defaults of its kind entirely; the other kind keeps its own. Amounts are base
units: lamports for network currency, token base units for tokens. The spec's default
"1" for NON_MANAGED per transaction is read as 1 SOL (10^9 lamports).
"""

from __future__ import annotations

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
