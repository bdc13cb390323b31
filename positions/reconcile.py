"""Drift between the service's balances and the chain (docs/positions.md, "Reconcile").

Compares every ACTIVE account record (lamports) and every ACTIVE position (token amount,
frozen state, delegate) of a cluster with what the network holds now, read in batches of
100 (getMultipleAccounts), and reports each difference. With ``repair`` the offchain
values are set to the chain's, each repair logged as a TransactionEvent-free audit line in
the report (the chain is the source of truth for balances; offchain-only fields are never
touched). Transactions still in flight make a difference expected, so records touched by
one are reported as ``in_flight`` instead of drift. The read is never older than the newest
confirmation whose effects were applied (``minContextSlot``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction as db_transaction
from solders.pubkey import Pubkey

from accounts.models import Account, AccountStatus
from tenancy.scoping import worker_only
from chain.rpc import rpc_for
from transactions.models import Transaction, TransactionStatus

from .models import Position, PositionStatus
from .onchain import decode_token_account


@dataclass
class Drift:
    kind: str  # LAMPORTS, TOKEN_AMOUNT, FROZEN, DELEGATE, MISSING_ONCHAIN, NOT_A_TOKEN_ACCOUNT
    record: str  # offchainId
    address: str
    offchain: object
    onchain: object

    def as_dict(self) -> dict:
        return {"kind": self.kind, "offchainId": self.record, "address": self.address, "offchain": str(self.offchain),
                "onchain": None if self.onchain is None else str(self.onchain)}  # null: nothing (readable) there


@dataclass
class Report:
    cluster: str
    accounts_checked: int = 0
    positions_checked: int = 0
    in_flight: int = 0
    drift: list[Drift] = field(default_factory=list)
    repaired: int = 0

    def as_dict(self) -> dict:
        return {"cluster": self.cluster, "accountsChecked": self.accounts_checked, "positionsChecked": self.positions_checked,
                "inFlight": self.in_flight, "drift": [d.as_dict() for d in self.drift], "repaired": self.repaired}


def _in_flight_addresses(cluster: str) -> set[str]:
    """Addresses named by transactions not yet settled: their balances may lawfully differ."""
    from transactions.effects import static_addresses

    rows = Transaction.unscoped.filter(cluster=cluster, status__in=[TransactionStatus.SIGNED, TransactionStatus.SUBMITTED]).only("message")
    rows = list(rows) + list(Transaction.unscoped.filter(cluster=cluster, status__in=[TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED], effects_applied_at__isnull=True).only("message"))
    return {address for tx in rows for address in static_addresses(tx)}


def newest_settled_slot(cluster: str) -> int | None:
    """The slot of the newest transaction of ``cluster`` whose effects the service applied."""
    from django.db.models import Max

    return Transaction.unscoped.filter(cluster=cluster, effects_applied_at__isnull=False).aggregate(slot=Max("slot"))["slot"]


@worker_only  # an operator's sweep over every tenant
def reconcile(*, cluster: str, repair: bool = False) -> Report:
    report = Report(cluster)
    rpc = rpc_for(cluster)
    busy = _in_flight_addresses(cluster)
    accounts = list(Account.unscoped.filter(cluster=cluster, status=AccountStatus.ACTIVE).only("pk", "offchain_id", "address", "lamports_balance", "token_balance").order_by("pk"))
    positions = {p.account_id: p for p in Position.unscoped.filter(cluster=cluster, status=PositionStatus.ACTIVE).only("pk", "account_id", "frozen", "delegate_address", "delegated_amount")}
    # Read at a slot no older than the newest write the service applied (minContextSlot): a
    # node behind it would show balances from before that write as drift (and ``repair``
    # would write them back). None reached it through the retries: ChainBehind, no report.
    chain = rpc.accounts([Pubkey.from_string(a.address) for a in accounts], min_context_slot=newest_settled_slot(cluster)) if accounts else []
    fixes: list[tuple[str, int, dict]] = []
    for account, onchain in zip(accounts, chain):
        report.accounts_checked += 1
        if account.address in busy:
            report.in_flight += 1
            continue
        position = positions.get(account.pk)
        if onchain is None:
            # An account without lamports does not exist on the network: in agreement when
            # the record says 0 and it is no position (a token account must exist).
            if position is not None or int(account.lamports_balance):
                report.drift.append(Drift("MISSING_ONCHAIN", str(account.offchain_id), account.address, int(account.lamports_balance), None))
                if position is None:
                    fixes.append(("account", account.pk, {"lamports_balance": 0}))
            continue
        if int(account.lamports_balance) != onchain.lamports:
            report.drift.append(Drift("LAMPORTS", str(account.offchain_id), account.address, int(account.lamports_balance), onchain.lamports))
            fixes.append(("account", account.pk, {"lamports_balance": onchain.lamports}))
        if position is None:
            continue
        report.positions_checked += 1
        try:
            state = decode_token_account(bytes(onchain.data))
        except ValueError:  # something else lives at a position's address now: no repair can say what
            report.drift.append(Drift("NOT_A_TOKEN_ACCOUNT", str(account.offchain_id), account.address, int(account.token_balance or 0), None))
            continue
        if int(account.token_balance or 0) != state.amount:
            report.drift.append(Drift("TOKEN_AMOUNT", str(account.offchain_id), account.address, int(account.token_balance or 0), state.amount))
            fixes.append(("account", account.pk, {"token_balance": state.amount}))
        if position.frozen != state.frozen:
            report.drift.append(Drift("FROZEN", str(account.offchain_id), account.address, position.frozen, state.frozen))
            fixes.append(("position", position.pk, {"frozen": state.frozen}))
        if (position.delegate_address or None) != state.delegate or (state.delegate and int(position.delegated_amount) != state.delegated_amount):
            report.drift.append(Drift("DELEGATE", str(account.offchain_id), account.address, f"{position.delegate_address}:{position.delegated_amount}", f"{state.delegate}:{state.delegated_amount}"))
            fixes.append(("position", position.pk, {"delegate_address": state.delegate or "", "delegated_amount": state.delegated_amount if state.delegate else 0}))
    if repair and fixes:
        with db_transaction.atomic():
            for model, pk, values in fixes:
                (Account if model == "account" else Position).unscoped.filter(pk=pk).update(**values)
        report.repaired = len(fixes)
    return report
