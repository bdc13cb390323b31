"""Reads of the loans area, always the acting organization's own records.

A loan response shows the records as the last confirmed change left them, valued with the
feeds as the chain holds them now: one getMultipleAccounts per answer reads the feeds of
every loan on it and the Clock sysvar (the chain's time: interest estimates and feed ages
are the chain's)."""

from __future__ import annotations

import struct

from django.db.models import Prefetch, Q

from accounts.models import Account
from accounts.selectors import for_display
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant
from chain.rpc import rpc_for

from . import onchain, render
from .lookup import resolve_loan, resolve_strategy
from .models import LoanBorrowedItem, LoanPledgedItem, LoanStrategyMint

CLOCK = "SysvarC1ock11111111111111111111111111111111"


def _pledged(condition: Q) -> Q:
    return Q(pk__in=LoanPledgedItem.objects.filter(condition).values("loan_id"))


def _borrowed(condition: Q) -> Q:
    return Q(pk__in=LoanBorrowedItem.objects.filter(condition).values("loan_id"))


#: Fetch Loans fieldNames (spec, Loans 3; docs/loans.md "Fetch Loans"). Item fields hold when
#: one of the loan's items matches (not sortable).
LOAN_QUERY = QuerySpec(
    fields={
        "status": QueryField("TEXT", "status"),
        "escrowOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "escrow_address"),
        "borrowerOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "borrower_address"),
        "lenderOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "lender_address"),
        "pledgedItemOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "token_account_address", sortable=False, related=_pledged),
        "borrowedItemOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "position__address", sortable=False, related=_borrowed),
        "escrowOffchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "borrowerOffchainId": QueryField("OFFCHAIN_ID", "borrower__offchain_id"),
        "lenderOffchainId": QueryField("OFFCHAIN_ID", "lender__offchain_id", nullable=True),
        "pledgedItemOffchainId": QueryField("OFFCHAIN_ID", "position__account__offchain_id", sortable=False, related=_pledged),
        "borrowedItemOffchainId": QueryField("OFFCHAIN_ID", "position__account__offchain_id", sortable=False, related=_borrowed),
        "pledgedItemAmount": QueryField("NUMBER", "pledged_amount", sortable=False, related=_pledged),
        "borrowedItemDueAmount": QueryField("NUMBER", "due_amount", sortable=False, related=_borrowed),
        "loanDurationCode": QueryField("TEXT", "duration_code"),
        "loanDurationUnit": QueryField("NUMBER", "duration_unit"),
    },
    default_sort=(("status", "ASC"),),
    tiebreak="-id",
    default_limit=50,
    max_limit=200,
)

_ITEMS = (
    Prefetch("pledged_items", queryset=LoanPledgedItem.objects.select_related("instrument", "position").order_by("index")),
    Prefetch("borrowed_items", queryset=LoanBorrowedItem.objects.select_related("instrument", "position").order_by("index")),
)


def _display_accounts(tenant, loans) -> dict:
    """Every account record the answers show (escrow, borrower, lender, the items' token
    accounts, the instruments' mint accounts), as responses show them, in one query."""
    ids = set()
    for loan in loans:
        ids |= {loan.escrow_account_id, loan.borrower_id, loan.lender_id}
        for item in [*loan.pledged_items.all(), *loan.borrowed_items.all()]:
            ids.add(item.instrument.mint_account_id)
            if item.position is not None:
                ids.add(item.position.account_id)
    ids.discard(None)
    return {a.pk: a for a in for_display(Account.objects.visible_to(tenant).filter(pk__in=ids))}


def _chain(cluster: str, loans) -> tuple[dict, int]:
    """The feeds the loans' items name, decoded, and the chain's clock, in one read."""
    feeds = {item.feed_address for loan in loans for item in [*loan.pledged_items.all(), *loan.borrowed_items.all()] if item.feed_address}
    read = rpc_for(cluster).read_accounts([CLOCK, *sorted(feeds)])
    now = struct.unpack_from("<QqQQq", bytes(read.accounts[CLOCK].data))[4]
    oracle = str(onchain.oracle_program_id(cluster))
    return {address: onchain.decode_feed(read.accounts.get(address), oracle) for address in feeds}, now


def loan_details(*, tenant, cluster: str, lookup: dict, until=None) -> dict:
    """Fetch Loan Details: the loan response; estimatedInterest until ``until`` (a datetime;
    default the chain's clock now)."""
    from django.db.models import prefetch_related_objects

    loan = resolve_loan(tenant, cluster, lookup, field="itemData.escrow")
    prefetch_related_objects([loan], *_ITEMS)
    readings, now = _chain(cluster, [loan])
    return render.loan_detailed(loan, accounts=_display_accounts(tenant, [loan]), readings=readings, now=now, until=onchain.seconds(until))


def loan_list(*, queryset, cluster: str, item_query: dict | None) -> tuple[list[dict], int]:
    """A page of ``queryset`` (the view's get_queryset(): the tenant's own loans), rendered."""
    tenant = scoped_tenant(queryset, own=True)
    page, count = apply_item_query(queryset.filter(cluster=cluster), item_query, LOAN_QUERY,
                                   present=lambda q: q.select_related("strategy", "last_transaction").prefetch_related(*_ITEMS))
    loans = list(page)
    if not loans:
        return [], count
    readings, now = _chain(cluster, loans)
    accounts = _display_accounts(tenant, loans)
    return [render.loan_detailed(loan, accounts=accounts, readings=readings, now=now) for loan in loans], count


def strategy_details(*, tenant, cluster: str, lookup: dict) -> dict:
    from django.db.models import prefetch_related_objects

    strategy = resolve_strategy(tenant, cluster, lookup, field="itemData.loanStrategy")
    prefetch_related_objects([strategy], Prefetch("mints", queryset=LoanStrategyMint.objects.select_related("instrument", "position__account").order_by("role", "index")))
    ids = {strategy.lender_id, *(m.position.account_id for m in strategy.mints.all() if m.position is not None)}
    accounts = {a.pk: a for a in for_display(Account.objects.visible_to(tenant).filter(pk__in=ids))}
    return render.strategy_detailed(strategy, accounts=accounts)
