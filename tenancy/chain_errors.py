"""The chain client's errors as the API answers them (docs/errors.md, Chain): the one place
that decides, for an error of chain/errors.py, its HTTP status and the field of the request
it is about. Registered with the API's exception handler by tenancy/apps.py; code that
answers for an item (a batch's) or an admin action calls ``api_error`` the same way.

The chain client stands below the API and names fields as its callers' plans do
(``cluster``, ``config.lookup_tables[0]``, ``config.version``); the request's names for them
are here."""

from __future__ import annotations

import re

from chain.errors import ChainBehind, ChainBusy, ChainError, ChainRefused, ChainRpcError, ChainUnavailable, SimulationFailed, TransactionTooLarge
from ledger_project.api.errors import LedgerError, api_error, register_translation

__all__ = ["api_error", "register"]

# Most specific first: ChainBusy and ChainBehind are ChainUnavailable.
_STATUS: tuple[tuple[type, int], ...] = (
    (ChainBusy, 503),
    (ChainBehind, 503),
    (ChainUnavailable, 503),
    (ChainRpcError, 500),
    (SimulationFailed, 400),
    (TransactionTooLarge, 400),
    (ChainRefused, 400),
)

# A chain field path → the request's (the engine's TxConfig is the request's svmTransactionConfig).
_FIELDS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^cluster$"), "svmCluster"),
    (re.compile(r"^config\.lookup_tables\[(\d+)\]$"), r"svmTransactionConfig.addressLookupTables[\1]"),
    (re.compile(r"^config\.version$"), "svmTransactionConfig.transactionVersion"),
)

# Where an error the chain raised without a field is about in the request.
_DEFAULT_FIELDS: tuple[tuple[type, str], ...] = (
    (TransactionTooLarge, "itemData"),
)


def is_chain_path(field: str | None) -> bool:
    """Whether ``field`` is one of the chain client's own paths (mapped here, not at the door)."""
    return field is not None and any(pattern.match(field) for pattern, _ in _FIELDS)


def _status(exc: ChainError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


def _field(exc: ChainError) -> str | None:
    if exc.field is None:
        return next((field for kind, field in _DEFAULT_FIELDS if isinstance(exc, kind)), None)
    for pattern, replacement in _FIELDS:
        if pattern.match(exc.field):
            return pattern.sub(replacement, exc.field)
    return exc.field  # a caller's own path, passed through the client


class ChainAnswer(LedgerError):
    """A chain error as the API's: its code and message, the status and field decided here;
    the chain's error stays reachable (``chain_error``, and ``__cause__``)."""

    def __init__(self, exc: ChainError):
        super().__init__(exc.message, field=_field(exc), code=exc.code, extra=exc.extra)
        self.status_code = _status(exc)
        self.retry_after = exc.retry_after if self.status_code in (429, 503) else None
        self.chain_error = exc
        self.__cause__ = exc


def _translate(exc: Exception) -> LedgerError:
    return ChainAnswer(exc)


def register() -> None:
    """Make the API answer chain errors as this module says (tenancy/apps.py)."""
    register_translation(ChainError, _translate)
