"""Row locks of the loans area (transactions.locks: pk order, inside a write phase).

Order: accounts (a debited owner, a funder), positions, then the loan or strategy row: the
order the confirmation effects lock in (accounts, then positions: positions/movement.py)."""

from __future__ import annotations

from transactions.locks import lock_rows

from .models import Loan, LoanStrategy


def lock_loan(pk: int, *, tenant) -> Loan:
    """The tenant's loan, locked and fresh (no joins: FOR UPDATE would lock them too)."""
    return lock_rows(Loan.objects.for_tenant(tenant).filter(pk=pk))[0]


def lock_strategy(pk: int, *, tenant) -> LoanStrategy:
    return lock_rows(LoanStrategy.objects.for_tenant(tenant).filter(pk=pk))[0]
