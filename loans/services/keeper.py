"""The loan keeper (docs/loans.md, "The keeper"): a periodic look at every ACTIVE loan.

Per cluster, one getMultipleAccounts reads the loans' escrows, their strategies, the Clock
sysvar (the chain's time: interest, due times and feed ages are the chain's, not this
machine's), then one more the feeds. For each loan:

- a record behind the chain (a transaction the service did not send: someone repaid or
  liquidated directly) is brought up to date (loans/effects.py ``sync_loan``);
- a loan the program would let be liquidated — overdue, or debt beyond collateral ×
  liquidation ratio with fresh feeds — is flagged (``flagged_at``, ``flag_reason``), and,
  when the organization records its strategy with ``liquidationMode`` LIQUIDATE, liquidated:
  Liquidate and ClaimCollateral per pledged item, sent with the platform fee payer (the
  program lets anyone liquidate; it judges, so a loan the feeds no longer condemn is
  refused in simulation and nothing is recorded);
- a flag that no longer holds is cleared.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field as dc_field

from django.conf import settings
from django.utils import timezone
from solders.pubkey import Pubkey

from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from programs.lending import abi, client
from tenancy.scoping import worker_only
from chain.rpc import rpc_for
from chain.errors import ChainError
from transactions.programs import program_id as configured_program_id
from transactions.services import transaction_build, transaction_record

from .. import onchain, operations
from ..effects import sync_loan
from ..models import LiquidationMode, Loan, LoanStatus, LoanStrategy

logger = logging.getLogger("ledger.loans")
CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")


@dataclass
class KeeperReport:
    cluster: str
    checked: int = 0
    synced: int = 0
    flagged: list[str] = dc_field(default_factory=list)
    liquidated: list[str] = dc_field(default_factory=list)
    refused: dict[str, str] = dc_field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"cluster": self.cluster, "checked": self.checked, "synced": self.synced, "flagged": self.flagged, "liquidated": self.liquidated, "refused": self.refused}


def _clock(account) -> int:
    return struct.unpack_from("<QqQQq", bytes(account.data))[4]


def prices(strategy, state, feeds: dict, now: int) -> dict:
    """The strategy's feed reading of every item of the loan, by (role, mint)."""
    out = {}
    oracle = str(strategy.oracle_program)
    for role, items in ((abi.ROLE_PLEDGE, state.pledged), (abi.ROLE_BORROW, state.borrowed)):
        for item in items:
            entry = strategy.mint(role, item.mint)
            if entry is not None:
                out[(role, str(item.mint))] = onchain.price_of(onchain.decode_feed(feeds.get(str(entry.feed)), oracle), feed=str(entry.feed), now=now, max_age=entry.max_age)
    return out


@worker_only  # the keeper acts for every organization's loans (beat)
def loans_watch(*, cluster: str) -> KeeperReport:
    report = KeeperReport(cluster)
    program = configured_program_id(cluster, onchain.PROGRAM)
    if program is None:
        return report
    loans = list(Loan.unscoped.filter(cluster=cluster, status=LoanStatus.ACTIVE).select_related("pending_transaction", "borrower").order_by("pk"))
    if not loans:
        return report
    rpc = rpc_for(cluster)
    first = rpc.read_accounts([str(CLOCK), *[loan.escrow_address for loan in loans], *{loan.strategy_address for loan in loans}])
    now = _clock(first.accounts[str(CLOCK)])
    strategies = {address: onchain.decode_strategy(first.accounts.get(address), str(program)) for address in {loan.strategy_address for loan in loans}}
    feed_addresses = [str(m.feed) for s in strategies.values() if s is not None for m in (*s.pledge_mints, *s.borrow_mints)]
    feeds = rpc.read_accounts(feed_addresses).accounts if feed_addresses else {}
    for loan in loans:
        report.checked += 1
        if loan.pending_transaction_id is not None and loan.pending_transaction.effects_applied_at is None:
            continue  # a transaction of the loan is in flight: its confirmation updates it
        state = onchain.decode_loan(first.accounts.get(loan.escrow_address), str(program))
        strategy = strategies.get(str(state.strategy)) if state is not None else None
        if state is None or state.status != LoanStatus.ACTIVE or str(state.strategy) != loan.strategy_address:
            sync_loan(loan, state, slot=first.slot, strategy=strategy)
            report.synced += 1
            continue
        if strategy is None:
            continue
        value = onchain.valuation(state, prices(strategy, state, feeds, now), now=now)
        _flag(loan, value, report)
        if value.liquidatable and _mode(loan) == LiquidationMode.LIQUIDATE:
            try:
                loan_liquidate(loan=loan, state=state, strategy=strategy, reason=value.reason)
                report.liquidated.append(str(loan.offchain_id))
            except (LedgerError, ChainError) as exc:
                report.refused[str(loan.offchain_id)] = exc.message
                logger.info("the keeper could not liquidate loan %s: %s", loan.escrow_address, exc)
    return report


@worker_only  # the keeper's
def _flag(loan: Loan, value: onchain.Valuation, report: KeeperReport) -> None:
    now = timezone.now()
    if value.liquidatable:
        Loan.unscoped.filter(pk=loan.pk, flagged_at__isnull=True).update(flagged_at=now)
        Loan.unscoped.filter(pk=loan.pk).update(flag_reason=value.reason, checked_at=now)
        report.flagged.append(str(loan.offchain_id))
    else:
        Loan.unscoped.filter(pk=loan.pk).update(flagged_at=None, flag_reason="", checked_at=now)


@worker_only  # the keeper reads the lender organization's record of the strategy
def _mode(loan: Loan) -> str:
    """The liquidation mode of the loan's strategy, as its lender's organization set it
    (any organization's record of the strategy: the lender decides)."""
    strategy = LoanStrategy.unscoped.filter(cluster=loan.cluster, address=loan.strategy_address).exclude(status="FAILED").order_by("pk").first()
    return strategy.liquidation_mode if strategy is not None else LiquidationMode.FLAG


@worker_only  # the keeper's liquidation; also the back office's action
def loan_liquidate(*, loan: Loan, state, strategy, reason: str = "") -> object:
    """Liquidate, then ClaimCollateral per pledged item (the collateral to the strategy, the
    escrow token accounts' rent to the borrower), with the platform fee payer. The program
    refuses a loan it may not liquidate (400 PROGRAM_ERROR NotLiquidatable: nothing recorded)."""
    program, escrow, strategy_key = Pubkey.from_string(loan.program_address), Pubkey.from_string(loan.escrow_address), Pubkey.from_string(loan.strategy_address)
    pledged, borrowed = [str(i.mint) for i in state.pledged], [str(i.mint) for i in state.borrowed]
    instructions = [client.liquidate(program, escrow=escrow, strategy=strategy_key, feeds=onchain.feeds(strategy, pledged, borrowed, field="loan"))]
    for item in state.pledged:
        instrument = next(i.instrument for i in loan.pledged_items.select_related("instrument") if i.mint_address == str(item.mint))
        instructions.append(client.claim_collateral(program, escrow=escrow, strategy=strategy_key, borrower=Pubkey.from_string(loan.borrower_address),
                                                    mint=onchain.token_mint(instrument)))
    prepared = transaction_build(context=OperationContext.system(tenant=loan.tenant, cluster=loan.cluster), operation=operations.LIQUIDATE, instructions=instructions)
    with write_phase(on_abort=prepared.release):
        locked = Loan.unscoped.select_for_update().get(pk=loan.pk)
        if locked.status != LoanStatus.ACTIVE or (locked.pending_transaction_id is not None and locked.pending_transaction.effects_applied_at is None):
            raise LedgerError("The loan changed meanwhile.", code="OPERATION_IN_PROGRESS")
        tx = transaction_record(prepared, effects_data={"loan": str(loan.offchain_id), "strategies": [loan.strategy_address], "liquidation": {"reason": reason}})
        Loan.unscoped.filter(pk=loan.pk).update(last_transaction=tx, pending_transaction=tx)
    return tx


@worker_only
def keeper_clusters() -> list[str]:
    return sorted(set(Loan.unscoped.filter(status=LoanStatus.ACTIVE).values_list("cluster", flat=True)) & set(settings.LEDGER_CLUSTERS))
