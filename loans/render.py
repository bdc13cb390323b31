"""Loan and strategy responses (spec: "Loan response"; docs/loans.md, "Loan response").

Amounts are the instrument's displayed amounts (numbers, exact); ratios and the APY are in
basis points, the unit of expectedApy and expectedLqt; times ISO 8601 UTC.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

from accounts.render import account_detailed, uuid_text
from instruments.render import unrecorded_account
from ledger_project.api.renderers import DisplayDecimal
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text
from positions.values import display

from . import onchain


@renders("accounts.serializers.IdentifiersOut")
def identifiers(loan) -> dict:
    """A loan: its escrow's address and its offchainId (its escrow record's)."""
    return {"onchainId": loan.escrow_address, "offchainId": uuid_text(loan.offchain_id)}


@renders("accounts.serializers.IdentifiersOut")
def strategy_identifiers(strategy) -> dict:
    return {"onchainId": strategy.address, "offchainId": uuid_text(strategy.offchain_id)}


def _account(accounts: dict, pk, address: str) -> dict:
    return account_detailed(accounts[pk]) if pk is not None and pk in accounts else unrecorded_account(address)


#: significant digits of interestPerSecond (docs/loans.md, "Loan response"): a rate, not an
#: amount — the exact per-second figure is a fraction with ~30 digits (principal × APY over
#: a year of seconds), which says nothing more; the amounts owed are exact (interestOutstanding,
#: estimatedInterest). 12 digits keep a year's interest within 1e-10 of it.
PER_SECOND_DIGITS = 12


def per_second(units: Decimal, decimals: int) -> DisplayDecimal:
    """Base units a second → displayed units a second, rounded half-even to
    PER_SECOND_DIGITS significant digits, trailing zeros dropped, in plain notation
    (0.00000317097919838; 0 for no interest)."""
    with localcontext() as ctx:
        ctx.prec = 80
        value = units.scaleb(-int(decimals))
        if not value:
            return DisplayDecimal(0)
        ctx.prec = PER_SECOND_DIGITS
        rounded = +value  # unary plus rounds to the context's precision
    return DisplayDecimal(rounded.normalize())


def _per_second(units: Decimal, instrument) -> DisplayDecimal:
    return per_second(units, int(instrument.decimals))


def _transaction(tx) -> dict | None:
    if tx is None:
        return None
    return {"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": uuid_text(tx.offchain_id)}


def _market(loan, accounts: dict, readings: dict, now: int) -> tuple[list[dict], dict]:
    """marketData: per instrument of the loan (pledged, then borrowed), the instrument as
    the spec shows it and the strategy's feed reading of it; and the prices by (role, mint)."""
    out, prices, seen = [], {}, set()
    for role, items in ((onchain.ROLE_PLEDGE, loan.pledged_items.all()), (onchain.ROLE_BORROW, loan.borrowed_items.all())):
        for item in items:
            price = onchain.price_of(readings.get(item.feed_address), feed=item.feed_address, now=now, max_age=item.max_age_seconds)
            prices[(role, item.mint_address)] = price
            if item.mint_address in seen:
                continue
            seen.add(item.mint_address)
            instrument = item.instrument
            mint_account = accounts.get(instrument.mint_account_id)
            rendered = account_detailed(mint_account) if mint_account is not None else unrecorded_account(instrument.address)
            out.append({
                "financialInstrument": {
                    "onchain": {"id": instrument.address, "lastTransactionId": rendered["onchain"]["lastTransactionId"], "lastTransactionAt": rendered["onchain"]["lastTransactionAt"]},
                    "offchain": rendered["offchain"],
                },
                "alId": instrument.al_id,
                "dataSource": {"onchainId": item.feed_address or None},
                "price": DisplayDecimal(price.price) if price.price is not None else None,
                "observedAt": timestamp_text(onchain.moment(price.observed_at)),
                "round": price.round,
                "fresh": price.fresh,
                "maxAgeSeconds": item.max_age_seconds,
            })
    return out, prices


@renders("loans.serializers.LoanOutput")
def loan_detailed(loan, *, accounts: dict, readings: dict, now: int, until: int | None = None) -> dict:
    """The spec's Loan response, then what the service adds. ``accounts``: display records
    by pk (loans/selectors.py); ``readings``: decoded feeds by address; ``now``: the chain's
    clock; ``until``: computeEstimatedInterestUntil (default ``now``). Interest: as of the
    last update (``interestOutstanding``) and accrued to ``until`` exactly as the program
    would (``estimatedInterest``, programs/lending/client.py Loan.at)."""
    until = now if until is None else until
    market, prices = _market(loan, accounts, readings, now)
    chain = onchain.recorded_loan(loan)
    later = {str(b.mint): b for b in chain.at(until).borrowed}
    current = {str(b.mint): b for b in chain.borrowed}
    duration = {"code": loan.duration_code, "unit": int(loan.duration_unit)}
    borrowed = []
    for item in loan.borrowed_items.all():
        instrument, b = item.instrument, current[item.mint_address]
        borrowed.append({
            "apy": int(loan.apy_bps), "loanToValueRatio": int(loan.ltv_bps), "liquidationRatio": int(loan.liquidation_bps), "duration": duration,
            "principalDue": display(b.principal_outstanding, instrument), "principalRepaid": display(b.principal_repaid, instrument),
            "interestPerSecond": _per_second(chain.interest_per_second(b), instrument), "interestOutstanding": display(b.interest_due, instrument),
            "estimatedInterest": display(later[item.mint_address].interest_due, instrument), "lastInterestUpdateTime": timestamp_text(loan.last_interest_update_time),
            "accountDetails": _account(accounts, item.position.account_id, item.position.address) if item.position is not None else None,
            "financialInstrument": {"onchainId": instrument.address, "offchainId": uuid_text(instrument.offchain_id)},
        })
    pledged = [{
        "pledgedAmount": display(int(item.amount), item.instrument),
        "accountDetails": _account(accounts, item.position.account_id if item.position is not None else None, item.token_account_address),
        "financialInstrument": {"onchainId": item.instrument.address, "offchainId": uuid_text(item.instrument.offchain_id)},
    } for item in loan.pledged_items.all()]
    value = onchain.valuation(chain, prices, now=now)
    return {
        "status": loan.status,
        "escrow": _account(accounts, loan.escrow_account_id, loan.escrow_address),
        "borrower": _account(accounts, loan.borrower_id, loan.borrower_address),
        "lender": _account(accounts, loan.lender_id, loan.lender_address),
        "pledgedItems": pledged,
        "borrowedItems": borrowed,
        "marketData": market,
        # Beyond the spec's table (docs/loans.md, "Loan response").
        "onchainId": loan.escrow_address,
        "offchainId": uuid_text(loan.offchain_id),
        "defiProtocol": "PARTNER_LENDING",
        "loanStrategy": {"onchainId": loan.strategy_address, "offchainId": uuid_text(loan.strategy.offchain_id) if loan.strategy_id else None},
        "startTime": timestamp_text(loan.start_time),
        "dueTime": timestamp_text(loan.due_time),
        "closedAt": timestamp_text(loan.closed_at),
        "estimatedInterestUntil": timestamp_text(onchain.moment(until)),
        "valuation": {
            "collateralValue": DisplayDecimal(value.collateral) if value.collateral is not None else None,
            "debtValue": DisplayDecimal(value.debt) if value.debt is not None else None,
            "loanToValueRatio": DisplayDecimal(value.ltv_bps) if value.ltv_bps is not None else None,
            "liquidatable": value.liquidatable,
        },
        "flaggedAt": timestamp_text(loan.flagged_at),
        "flagReason": loan.flag_reason or None,
        "lastTransaction": _transaction(loan.last_transaction),
    }


@renders("loans.serializers.StrategyOutput")
def strategy_detailed(strategy, *, accounts: dict) -> dict:
    mints = list(strategy.mints.all())

    def entry(m) -> dict:
        instrument = m.instrument
        return {
            "financialInstrument": {"onchainId": m.mint_address, "offchainId": uuid_text(instrument.offchain_id) if instrument else None, "alId": instrument.al_id if instrument else None},
            "dataSource": {"onchainId": m.feed_address},
            "maxAgeSeconds": int(m.max_age_seconds),
            "liquidity": _account(accounts, m.position.account_id if m.position is not None else None, m.token_account_address),
            "balance": {"amount": display(int(m.position.account.token_balance or 0), instrument), "lamports": int(m.position.account.token_balance or 0)}
            if m.position is not None and instrument is not None else None,
        }

    return {
        **strategy_identifiers(strategy),
        "defiProtocol": "PARTNER_LENDING",
        "status": strategy.status,
        "strategyId": int(strategy.strategy_id),
        "lender": _account(accounts, strategy.lender_id, strategy.lender_address),
        "program": {"onchainId": strategy.program_address},
        "oracleProgram": {"onchainId": strategy.oracle_program_address},
        "terms": {"apy": int(strategy.apy_bps), "loanToValueRatio": int(strategy.ltv_bps), "liquidationRatio": int(strategy.liquidation_bps),
                  "duration": {"code": strategy.duration_code, "unit": int(strategy.duration_unit)}},
        "expectedLoanValues": {"expectedApy": int(strategy.apy_bps), "expectedLqt": [int(strategy.ltv_bps), int(strategy.liquidation_bps)]},
        "pledgeInstruments": [entry(m) for m in mints if m.role == "PLEDGE"],
        "borrowInstruments": [entry(m) for m in mints if m.role == "BORROW"],
        "liquidationMode": strategy.liquidation_mode,
        "createdAt": timestamp_text(strategy.created_at),
        "creationTransaction": _transaction(strategy.creation_transaction),
        "lastTransaction": _transaction(strategy.last_transaction),
    }
