"""Loan and strategy records with nothing on chain (tenancy cases, bulk queries, admin pages)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from solders.keypair import Keypair

from accounts.models import AccountType
from accounts.tests.factories import AccountFactory
from instruments.tests.factories import FinancialInstrumentFactory
from loans.models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStatus, LoanStrategy, StrategyStatus
from positions.models import Position


def _address() -> str:
    return str(Keypair().pubkey())


def make_strategy(tenant, **fields) -> LoanStrategy:
    account = AccountFactory(tenant=tenant, type=AccountType.VAULT)
    lender = AccountFactory(tenant=tenant)
    return LoanStrategy.unscoped.create(
        tenant=tenant, cluster="CHAIN_LOCALNET", offchain_id=account.offchain_id, address=account.address, program_address=_address(), strategy_id=1, account=account,
        lender=lender, lender_address=lender.address, oracle_program_address=_address(), apy_bps=1_000, ltv_bps=5_000, liquidation_bps=8_000, duration_unit=30,
        status=StrategyStatus.ACTIVE, **fields,
    )


def make_loan(tenant, *, status: str = LoanStatus.ACTIVE, pledged: int = 100, due: int = 400, duration_unit: int = 30, borrower=None, lender=None, **fields) -> Loan:
    """A loan of ``pledged`` whole bonds (6 decimals) against ``due`` whole coins (2 decimals),
    its escrow's token account and the borrower's coin position recorded as positions."""
    escrow = AccountFactory(tenant=tenant, type=AccountType.LOAN_ESCROW)
    borrower = borrower or AccountFactory(tenant=tenant)
    bond = FinancialInstrumentFactory(tenant=tenant, decimals=6)
    coin = FinancialInstrumentFactory(tenant=tenant, decimals=2, al_type="STABLECOIN", al_category="FX")
    escrow_token = AccountFactory(tenant=tenant, type=AccountType.ASSET_TOKEN_ACCOUNT, token_balance=pledged * 10**6, token_decimals=6)
    borrowed_to = AccountFactory(tenant=tenant, type=AccountType.FUNDS_TOKEN_ACCOUNT, token_balance=due * 100, token_decimals=2)
    pledge_position = Position.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", account=escrow_token, address=escrow_token.address, owner=escrow,
                                               owner_address=escrow.address, instrument=bond)
    borrow_position = Position.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", account=borrowed_to, address=borrowed_to.address, owner=borrower,
                                               owner_address=borrower.address, instrument=coin)
    now = timezone.now()
    strategy = fields.get("strategy")
    fields.setdefault("strategy_address", strategy.address if strategy is not None else _address())
    loan = Loan.unscoped.create(
        tenant=tenant, cluster="CHAIN_LOCALNET", offchain_id=escrow.offchain_id, escrow_address=escrow.address, program_address=_address(), nonce=7, escrow_account=escrow,
        borrower=borrower, borrower_address=borrower.address, lender=lender, lender_address=lender.address if lender else _address(),
        status=status, apy_bps=1_000, ltv_bps=5_000, liquidation_bps=8_000, duration_unit=duration_unit, start_time=now, due_time=now + timedelta(days=duration_unit),
        last_interest_update_time=now, **fields,
    )
    LoanPledgedItem.objects.create(loan=loan, index=0, mint_address=bond.address, instrument=bond, token_account_address=escrow_token.address, position=pledge_position,
                                   amount=pledged * 10**6, pledged_amount=pledged)
    LoanBorrowedItem.objects.create(loan=loan, index=0, mint_address=coin.address, instrument=coin, position=borrow_position, principal=due * 100, due_amount=due)
    return loan
