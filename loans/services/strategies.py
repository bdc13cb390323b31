"""Loan strategies: Create Loan Strategy, Update Loan Strategy and Strategy Liquidity
(docs/loans.md, "Loan strategies" — endpoints of this service, not of the spec: the spec's
``loanStrategyAddress`` is "a lender vault prepared beforehand", and this is how one is
prepared through the API).

The lender signs every change (InitializeStrategy, SetTerms, SetMint, RemoveMint,
DepositLiquidity, WithdrawLiquidity); the strategy's rent comes from the funding account
(svmTransactionConfig.feePayer), the rent of its token accounts from the lender (the
program's rule). Offchain: the strategy, the record of its PDA (type VAULT, no key) and a
position per token account, owned by that record — PENDING until the transaction confirms.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.pubkey import Pubkey

from accounts.limits import network_debit_check
from accounts.locks import ensure_no_operation_in_flight
from accounts.lookup import resolve_account
from accounts.models import Account, AccountStatus, AccountType
from accounts.services import account_save, funding_signer
from accounts.signers import ensure_usable
from instruments.lookup import resolve_instrument
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from positions import instructions as ix
from positions.models import Position
from programs.lending import abi, client
from chain.rpc import rpc_for
from transactions.models import Transaction

from .. import onchain, operations
from ..locks import lock_strategy
from ..models import LiquidationMode, LoanStrategy, StrategyStatus
from .common import Debit, Holding, Plan, amount_of, build, debits_allowed, escrow_holding, holding, lendable, protocol, record

FIELD = "itemData.loanStrategy"
ROLES = {"PLEDGE": abi.ROLE_PLEDGE, "BORROW": abi.ROLE_BORROW}
_MAX_STRATEGY_ID = 2**63 - 1


@dataclass
class StrategyResult:
    strategy: LoanStrategy
    transaction: Transaction | None


@dataclass(frozen=True)
class MintChoice:
    role: int
    instrument: object
    feed: str
    max_age: int
    field: str


def _terms(data: dict, current: LoanStrategy | None, field: str) -> client.Terms:
    """The strategy's terms in the program's units: the given ones over the current ones."""
    terms = data or {}
    duration = terms.get("duration") or {}
    if duration.get("code", "DAYS") not in onchain.DURATION_CODES.values():
        raise LedgerError("The duration code is DAYS.", field=f"{field}.duration.code", code="INVALID_ENUM")
    pick = lambda name, attr: terms[name] if terms.get(name) is not None else getattr(current, attr, None)  # noqa: E731
    out = {"apy_bps": pick("apy", "apy_bps"), "ltv_bps": pick("loanToValueRatio", "ltv_bps"), "liquidation_bps": pick("liquidationRatio", "liquidation_bps"),
           "duration_unit": duration.get("unit") if duration.get("unit") is not None else getattr(current, "duration_unit", None)}
    for name, value in out.items():
        if value is None:
            raise LedgerError("Every term is required at creation.", field=field, code="TERMS_REQUIRED")
    if out["ltv_bps"] >= out["liquidation_bps"]:
        raise LedgerError("The liquidation ratio must be above the loan-to-value ratio.", field=f"{field}.liquidationRatio", code="RATIOS_OUT_OF_ORDER")
    return client.Terms(**out, duration_code=abi.DURATION_DAYS)


def _mints(plan: Plan, entries: list[dict] | None, role: str, field: str) -> list[MintChoice]:
    out = []
    oracle = str(onchain.oracle_program_id(plan.cluster))
    for i, entry in enumerate(entries or []):
        where = f"{field}[{i}]"
        instrument = lendable(resolve_instrument(plan.tenant, plan.cluster, entry["financialInstrument"], field=f"{where}.financialInstrument"), f"{where}.financialInstrument")
        feed = entry["dataSource"]["onchainId"]
        state = onchain.decode_feed(rpc_for(plan.cluster).account(Pubkey.from_string(feed)), oracle)
        if state is None:
            raise LedgerError("No price feed of the price_feed program exists at this address.", field=f"{where}.dataSource", code="FEED_NOT_FOUND")
        if str(state.mint) != instrument.address:
            raise LedgerError("The price feed prices another financial instrument.", field=f"{where}.dataSource", code="FEED_MINT_MISMATCH")
        out.append(MintChoice(ROLES[role], instrument, feed, entry["maxAgeSeconds"], where))
    return out


def _set_mint(plan: Plan, program: Pubkey, strategy: Pubkey, owner: Account, lender: Pubkey, choice: MintChoice, existing: dict[str, Position]) -> None:
    instrument = choice.instrument
    plan.instructions.append(client.set_mint(program, strategy=strategy, lender=lender, mint=onchain.token_mint(instrument), feed=Pubkey.from_string(choice.feed),
                                             role=choice.role, max_age=choice.max_age))
    escrow_holding(plan, owner, instrument, existing.get(str(ix.associated_address(strategy, instrument))))


def _lender_pays(plan: Plan, lender: Account) -> int:
    """Token accounts a strategy operation creates are paid by the lender (SetMint; a
    withdrawal's destination): its network-currency debit keys and limits apply."""
    owed, plan.rent = plan.rent, 0
    if owed:
        network_debit_check(lender, api_key=plan.api_key, lamports=owed, destination_type="MANAGED", field="itemData.lender")
    return owed


def strategy_create(ctx: OperationContext, *, data: dict) -> StrategyResult:
    """Create Loan Strategy: InitializeStrategy with the terms, then SetMint for each
    pledge and borrow instrument (its feed and maximum feed age), signed by the lender."""
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    p = "itemData"
    lender = resolve_account(tenant, cluster, data["lender"], field=f"{p}.lender", writable=True)
    ensure_usable(lender, field=f"{p}.lender")
    program = onchain.program_id(cluster)
    strategy_id = data.get("strategyId")
    if strategy_id is None:
        strategy_id = secrets.randbelow(_MAX_STRATEGY_ID)
    address = client.strategy_address(program, Pubkey.from_string(lender.address), strategy_id)[0]
    existing = LoanStrategy.objects.for_tenant(tenant).filter(cluster=cluster, address=str(address)).first()
    if existing is not None and existing.status != StrategyStatus.FAILED:
        raise ConflictError("The organization already has this loan strategy (lender and strategyId).", field=f"{p}.strategyId", code="STRATEGY_EXISTS")
    terms = _terms(data.get("terms"), None, f"{p}.terms")
    plan = Plan(ctx, dict(ctx.svm_config or {}), lender)
    pda = existing.account if existing is not None else Account(
        tenant=tenant, cluster=cluster, address=str(address), managed=False, type=AccountType.VAULT, status=AccountStatus.PENDING,
        name=((data.get("offchainReferences") or {}).get("name") or f"Loan strategy {strategy_id}")[:200], code=(data.get("offchainReferences") or {}).get("code") or "",
    )
    choices = _mints(plan, data.get("pledgeInstruments"), "PLEDGE", f"{p}.pledgeInstruments") + _mints(plan, data.get("borrowInstruments"), "BORROW", f"{p}.borrowInstruments")
    lender_key = Pubkey.from_string(lender.address)
    # The strategy's rent from the funding account (InitializeStrategy's payer), its token
    # accounts' from the lender (SetMint).
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config,
                             lamports=rpc_for(cluster).minimum_balance_for_rent_exemption(abi.STRATEGY_SIZE), destination_type="MANAGED")
    plan.instructions.append(client.initialize_strategy(program, payer=funding.pubkey, lender=lender_key, strategy_id=strategy_id,
                                                        oracle_program=onchain.oracle_program_id(cluster), terms=terms))
    for choice in choices:
        _set_mint(plan, program, address, pda, lender_key, choice, {})
    lender_rent = _lender_pays(plan, lender)
    plan.sign(funding.signer)
    prepared, _ = build(plan, operations.STRATEGY_CREATE)
    with write_phase(on_abort=prepared.release):
        if existing is None:
            account_save(pda)  # a new row: the strategy's positions are owned by it
        else:
            Account.objects.for_tenant(tenant).filter(pk=pda.pk).update(status=AccountStatus.PENDING)

        def save_strategy() -> LoanStrategy:
            strategy = existing or LoanStrategy(tenant=tenant, cluster=cluster)
            strategy.offchain_id = pda.offchain_id  # one identity offchain: the strategy is its PDA's record
            strategy.address, strategy.program_address, strategy.strategy_id, strategy.account = str(address), str(program), strategy_id, pda
            strategy.lender, strategy.lender_address, strategy.oracle_program_address = lender, lender.address, str(onchain.oracle_program_id(cluster))
            strategy.apy_bps, strategy.ltv_bps, strategy.liquidation_bps = terms.apy_bps, terms.ltv_bps, terms.liquidation_bps
            strategy.duration_code, strategy.duration_unit = "DAYS", terms.duration_unit
            strategy.liquidation_mode = data.get("liquidationMode") or LiquidationMode.FLAG
            strategy.status, strategy.rent_payer_address, strategy.synced_slot = StrategyStatus.PENDING, str(funding.pubkey), None
            try:
                with db_transaction.atomic():
                    strategy.save()
            except IntegrityError as exc:  # a concurrent request recorded it first
                raise ConflictError("The organization already has this loan strategy (lender and strategyId).", field=f"{p}.strategyId", code="STRATEGY_EXISTS") from exc
            return strategy

        strategy, tx = record(plan, prepared, funding, lock=save_strategy, key="strategy", lenderRent=lender_rent)
        strategy.creation_transaction = tx
        strategy.save(update_fields=["creation_transaction", "updated_at"])
        Account.objects.for_tenant(tenant).filter(pk=pda.pk).update(creation_transaction=tx, last_transaction=tx)
    return StrategyResult(strategy, tx)


def _live(strategy: LoanStrategy, field: str = FIELD) -> LoanStrategy:
    if strategy.status == StrategyStatus.PENDING:
        raise LedgerError("The strategy's creation has not been confirmed yet; retry once it is.", field=field, code="STRATEGY_PENDING")
    if strategy.status == StrategyStatus.FAILED:
        raise LedgerError("The strategy's creation failed: it does not exist on the network.", field=field, code="STRATEGY_NOT_ONCHAIN")
    ensure_no_operation_in_flight(strategy, field=field)
    return strategy


def strategy_update(ctx: OperationContext, *, strategy: LoanStrategy, data: dict) -> StrategyResult:
    """Update Loan Strategy: new terms (SetTerms, for new loans and refinancings), mints
    added or their feed changed (SetMint), mints removed (RemoveMint), signed by the
    lender; ``liquidationMode`` is the service's own (no transaction when only it changes)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    p = "itemData"
    _live(strategy)
    plan = Plan(ctx, dict(ctx.svm_config or {}), strategy.lender)
    program, address, lender_key = Pubkey.from_string(strategy.program_address), Pubkey.from_string(strategy.address), Pubkey.from_string(strategy.lender_address)
    if data.get("terms"):
        terms = _terms(data["terms"], strategy, f"{p}.terms")
        plan.instructions.append(client.set_terms(program, strategy=address, lender=lender_key, terms=terms))
    existing = {m.token_account_address: m.position for m in strategy.mints.select_related("position") if m.position is not None}
    for choice in _mints(plan, data.get("addPledgeInstruments"), "PLEDGE", f"{p}.addPledgeInstruments") + _mints(plan, data.get("addBorrowInstruments"), "BORROW", f"{p}.addBorrowInstruments"):
        _set_mint(plan, program, address, strategy.account, lender_key, choice, existing)
    for role, name in (("PLEDGE", "removePledgeInstruments"), ("BORROW", "removeBorrowInstruments")):
        for i, lookup in enumerate(data.get(name) or []):
            instrument = resolve_instrument(tenant, cluster, lookup, field=f"{p}.{name}[{i}]")
            plan.instructions.append(client.remove_mint(program, strategy=address, lender=lender_key, mint=Pubkey.from_string(instrument.address), role=ROLES[role]))
    mode = data.get("liquidationMode")
    if not plan.instructions:
        if mode is None:
            raise LedgerError("Nothing to change: give terms, instruments to add or remove, or liquidationMode.", field=p, code="CHANGE_REQUIRED")
        with write_phase():
            locked = lock_strategy(strategy.pk, tenant=tenant)
            locked.liquidation_mode = mode
            locked.save(update_fields=["liquidation_mode", "updated_at"])
        return StrategyResult(locked, None)
    lender_rent = _lender_pays(plan, strategy.lender)
    prepared, funding = build(plan, operations.STRATEGY_UPDATE)
    def locked_with_mode() -> LoanStrategy:
        locked = _live(lock_strategy(strategy.pk, tenant=tenant))
        if mode is not None:
            locked.liquidation_mode = mode
            locked.save(update_fields=["liquidation_mode", "updated_at"])
        return locked

    with write_phase(on_abort=prepared.release):
        locked, tx = record(plan, prepared, funding, lock=locked_with_mode, key="strategy", lenderRent=lender_rent)
    return StrategyResult(locked, tx)


def strategy_liquidity(ctx: OperationContext, *, strategy: LoanStrategy, data: dict) -> StrategyResult:
    """Strategy Liquidity: DEPOSIT moves the lender's tokens into the strategy's token
    account of a listed mint (DepositLiquidity); WITHDRAW moves tokens out of the strategy's
    token account of any mint — liquidity, repayments, liquidated collateral — to the
    lender's position or ``destination`` (WithdrawLiquidity, signed by the strategy inside
    the program). The lender signs both; debit limits apply as to any transfer."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    _live(strategy)
    instrument = lendable(resolve_instrument(tenant, cluster, data["financialInstrument"], field=f"{p}.financialInstrument"), f"{p}.financialInstrument")
    entry = strategy.mints.filter(mint_address=instrument.address).select_related("position").first()
    pool = entry.position if entry is not None else None
    token_account = ix.associated_address(strategy.address, instrument)
    if pool is None:
        pool = Position.objects.for_tenant(tenant).filter(cluster=cluster, address=str(token_account)).first()
    amount = amount_of(data["value"], instrument, f"{p}.value")
    plan = Plan(ctx, dict(ctx.svm_config or {}), strategy.lender)
    lender = strategy.lender
    default = {"owner": {"offchainId": str(lender.offchain_id)}, "financialInstrument": {"offchainId": str(instrument.offchain_id)}}
    program, address, lender_key = Pubkey.from_string(strategy.program_address), Pubkey.from_string(strategy.address), Pubkey.from_string(strategy.lender_address)
    mint = onchain.token_mint(instrument)
    if data["action"] == "DEPOSIT":
        if entry is None:
            raise LedgerError("The strategy does not list this instrument: add it first (Update Loan Strategy).", field=f"{p}.financialInstrument", code="MINT_NOT_LISTED")
        source: Holding = holding(plan, data.get("source") or default, f"{p}.source", owner=None, create=False, instrument=instrument)
        plan.instructions.append(client.deposit_liquidity(program, strategy=address, lender=lender_key, source=Pubkey.from_string(source.address), mint=mint, amount=amount))
        plan.debits.append(Debit(source.position.owner, source.position, amount, pool or str(token_account), f"{p}.source"))
    else:
        destination = holding(plan, data.get("destination") or default, f"{p}.destination", owner=None, create=True, instrument=instrument, role="receive")
        plan.instructions.append(client.withdraw_liquidity(program, strategy=address, lender=lender_key, mint=mint, destination=Pubkey.from_string(destination.address),
                                                           amount=amount))
        if pool is not None:
            plan.debits.append(Debit(lender, pool, amount, destination.position or lender, f"{p}.loanStrategy"))
    debits_allowed(plan)
    lender_rent = _lender_pays(plan, lender)
    prepared, funding = build(plan, operations.STRATEGY_LIQUIDITY)
    with write_phase(on_abort=prepared.release):
        locked, tx = record(plan, prepared, funding, lock=lambda: _live(lock_strategy(strategy.pk, tenant=tenant)), key="strategy",
                            lenderRent=lender_rent, liquidity={"action": data["action"], "mint": instrument.address, "amount": str(amount)})
    return StrategyResult(locked, tx)
