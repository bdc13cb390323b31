"""Loan and strategy lookups (docs/loans.md, "Lookups").

A loan is named by its ``escrow`` lookup: ``onchainId`` (the escrow account's address) and/or
``offchainId`` (the loan's, which is its escrow record's); a strategy by ``loanStrategy``
the same way (the strategy PDA's address, or its offchainId). Both forms given must name the
same record (404 CONFLICTING_LOOKUP). Only the acting organization's own records: another's
answers 404 NOT_FOUND, exactly like a missing one.
"""

from __future__ import annotations

import uuid

from accounts.lookup import single_match
from ledger_project.api.errors import LedgerError, NotFoundError

from .models import Loan, LoanStrategy

LOAN_RELATED = ("escrow_account", "borrower", "borrower__managed_key", "lender", "strategy", "pending_transaction", "last_transaction", "creation_transaction")
STRATEGY_RELATED = ("account", "lender", "lender__managed_key", "pending_transaction", "last_transaction", "creation_transaction")


def _resolve(queryset, lookup: dict | None, *, field: str, address_column: str, what: str):
    if not isinstance(lookup, dict) or not (lookup.get("onchainId") or lookup.get("offchainId")):
        raise LedgerError(f"A {what} is named by onchainId or offchainId.", field=field, code="INVALID_LOOKUP")
    matches = []
    if lookup.get("offchainId"):
        matches.append(("offchainId", queryset.filter(offchain_id=uuid.UUID(str(lookup["offchainId"]))).first()))
    if lookup.get("onchainId"):
        matches.append(("onchainId", queryset.filter(**{address_column: lookup["onchainId"]}).first()))
    found = single_match(matches, field)
    if found is None:
        raise NotFoundError(f"No such {what}.", field=field)
    return found


def loans_of(tenant, cluster: str):
    return Loan.objects.for_tenant(tenant).filter(cluster=cluster).select_related(*LOAN_RELATED)


def resolve_loan(tenant, cluster: str, lookup: dict | None, *, field: str = "itemData.escrow") -> Loan:
    return _resolve(loans_of(tenant, cluster), lookup, field=field, address_column="escrow_address", what="loan")


def strategies_of(tenant, cluster: str):
    return LoanStrategy.objects.for_tenant(tenant).filter(cluster=cluster).select_related(*STRATEGY_RELATED)


def resolve_strategy(tenant, cluster: str, lookup: dict | None, *, field: str = "itemData.loanStrategy") -> LoanStrategy:
    return _resolve(strategies_of(tenant, cluster), lookup, field=field, address_column="address", what="loan strategy")


def strategy_controller(tenant, account):
    """positions/limits.py CONTROLLED_BY for VAULT records (a strategy PDA): tokens sent to a
    strategy's liquidity are controlled by its lender (its record, else its address)."""
    strategy = LoanStrategy.objects.for_tenant(tenant).filter(account=account).select_related("lender").order_by().first()
    if strategy is None:
        return None
    return strategy.lender if strategy.lender.address == strategy.lender_address else strategy.lender_address


def escrow_controller(tenant, account):
    """CONTROLLED_BY for LOAN_ESCROW records: collateral in an escrow comes back to its
    borrower (its record)."""
    loan = Loan.objects.for_tenant(tenant).filter(escrow_account=account).select_related("borrower").order_by().first()
    return loan.borrower if loan is not None else None
