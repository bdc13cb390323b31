"""What every loan operation shares (docs/loans.md): the borrower as fee payer, the
borrower's token accounts an item moves tokens from or to (created on the way where the
operation allows), the steps before a pledge or a repayment (transferFrom, mintAsset),
escrow token accounts of frozen-by-default instruments, debit limits, and the build /
record phases with the lending program's refusals named by field.

Every operation has the house's shape (docs/transactions.md, "Path of a mutation"): read
and check, build / simulate / sign with no lock held, then one write phase under the
loan's (or strategy's) row lock that re-checks its status and in-flight marker and records
the transaction with the marker set. **The program judges the loan's rules** (terms,
loan-to-value against fresh feeds, what is owed, who signs): a refusal in simulation is a
400 PROGRAM_ERROR naming the program's error and the field it is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

from solders.instruction import Instruction
from solders.pubkey import Pubkey
from spl.token.instructions import MintToCheckedParams, ThawAccountParams, TransferCheckedParams, mint_to_checked, thaw_account, transfer_checked

from accounts.locks import ensure_no_operation_in_flight
from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account
from accounts.services import funding_effects, funding_signer
from accounts.signers import ensure_usable, signer_for, transaction_config
from instruments.models import FinancialInstrument, PositionState
from ledger_project.api.errors import LedgerError
from positions import instructions as ix
from positions.limits import TOKEN, Decision, debit_decision
from positions.lookup import OwnerTarget, resolve_position
from positions.models import Position
from positions.checks import live_position, movable_instrument
from positions.onchain import token_account_at
from positions.services import associated_draft, associated_rent, position_link_creation, position_save_new
from positions.values import base_units
from chain.errors import ProgramError
from chain.rpc import rpc_for
from tenancy.context import OperationContext
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from .. import onchain
from ..models import DEFI_PROTOCOL, Loan, LoanStatus

FEE_PAYER = "svmTransactionConfig.feePayer"


# --- the borrower and the fee payer ------------------------------------------------------------


def protocol(data: dict) -> None:
    if data.get("defiProtocol", DEFI_PROTOCOL) != DEFI_PROTOCOL:
        raise LedgerError(f"defiProtocol must be {DEFI_PROTOCOL}.", field="itemData.defiProtocol", code="INVALID_ENUM")


def borrower_config(tenant, cluster: str, svm_config: dict | None, borrower: Account) -> dict:
    """svmTransactionConfig with the borrower as fee payer (spec, Loans: the fee payer cannot
    differ from the loan's borrower): a feePayer naming another account is 400
    FEE_PAYER_NOT_BORROWER; none given, the borrower pays."""
    config = dict(svm_config or {})
    if config.get("feePayer"):
        given = resolve_account(tenant, cluster, config["feePayer"], field=FEE_PAYER)
        if given.address != borrower.address:
            raise LedgerError("For loans the fee payer is the loan's borrower.", field=FEE_PAYER, code="FEE_PAYER_NOT_BORROWER")
    config["feePayer"] = {"offchainId": str(borrower.offchain_id)}
    return config


# --- token accounts an item moves tokens from or to --------------------------------------------


@dataclass
class Holding:
    """A token account of an item: a recorded position, or one drafted (``draft``) that
    this transaction creates (``create``) or that exists on chain and is onboarded."""

    instrument: FinancialInstrument
    address: str
    owner_address: str
    position: Position | None = None
    draft: tuple[Account, Position] | None = None
    create: bool = False

    @property
    def identifiers(self) -> dict:
        return {"onchainId": self.address, "offchainId": str(self.position.offchain_id) if self.position is not None else None}


@dataclass
class Debit:
    """A token transfer the debit limits judge (positions/limits.py)."""

    source: Account
    position: Position
    amount: int
    destination: object
    field: str


@dataclass
class Plan:
    """What an operation's read phase decided, for the network and write phases.
    ``borrower``: the account that signs for the request and pays the rent of the token
    accounts it creates (the loan's borrower; for a strategy's operations, its lender)."""

    ctx: OperationContext  # the request's: who it acts for (tenant, cluster, acting key, x-request-id)
    svm_config: dict  # the request's svmTransactionConfig, the borrower (or lender) as fee payer by default
    borrower: Account
    instructions: list[Instruction] = dc_field(default_factory=list)
    signers: list[SignerSpec] = dc_field(default_factory=list)
    holdings: dict[str, Holding] = dc_field(default_factory=dict)
    debits: list[Debit] = dc_field(default_factory=list)
    rent: int = 0
    thawed: list[str] = dc_field(default_factory=list)
    #: instruction index → the request item it is for (itemData.itemsToBorrow[1]): a refusal
    #: of that instruction by the program names the item (``build``)
    item_fields: dict[int, str] = dc_field(default_factory=dict)

    @property
    def tenant(self):
        return self.ctx.tenant

    @property
    def cluster(self) -> str:
        return self.ctx.cluster

    @property
    def api_key(self):
        return self.ctx.api_key

    @property
    def borrower_key(self) -> Pubkey:
        return Pubkey.from_string(self.borrower.address)

    def for_item(self, field: str) -> None:
        """The instruction appended last is ``field``'s (e.g. a Borrow of itemsToBorrow[0])."""
        self.item_fields[len(self.instructions) - 1] = field

    def sign(self, signer: SignerSpec) -> None:
        self.signers.append(signer)


def _chain_token_account(cluster: str, address: str, instrument: FinancialInstrument):
    account = rpc_for(cluster).account(Pubkey.from_string(address))
    return account if token_account_at(account, program=ix.program_of(instrument)) is not None else None


def holding(plan: Plan, lookup: dict, field: str, *, owner: Account | None, create: bool, instrument: FinancialInstrument | None = None,
            role: str = "send") -> Holding:
    """The token account a position lookup names: a live position (of ``owner`` when given:
    400 OWNER_MISMATCH otherwise — spec, Loans: one owner across the request's assets), or,
    with ``create``, the owner's associated token account created by this transaction
    (recorded PENDING) or onboarded when the chain has it."""
    found = resolve_position(plan.tenant, plan.cluster, lookup, field=field, allow_missing=create)
    if isinstance(found, Position):
        if owner is not None and found.owner_id != owner.pk:
            raise LedgerError("The position's owner is not the loan's borrower (one owner across the request's assets).", field=field, code="OWNER_MISMATCH")
        _instrument(found.instrument, instrument, field)
        live_position(found, field, role)
        return plan.holdings.setdefault(found.address, Holding(found.instrument, found.address, found.owner_address, position=found))
    target: OwnerTarget = found
    if isinstance(target.owner, OffPlatform) or (owner is not None and target.owner.pk != owner.pk):
        raise LedgerError("The position's owner is not the loan's borrower (one owner across the request's assets).", field=f"{field}.owner", code="OWNER_MISMATCH")
    ensure_usable(target.owner, field=f"{field}.owner")
    _instrument(target.instrument, instrument, f"{field}.financialInstrument")
    address = str(ix.associated_address(target.owner.address, target.instrument))
    if address in plan.holdings:
        return plan.holdings[address]
    onchain_account = _chain_token_account(plan.cluster, address, target.instrument)
    if target.instrument.default_position_state == PositionState.FROZEN and onchain_account is None:
        raise LedgerError("The instrument's positions start frozen: initialize and unfreeze this position first (Initialize Position, Unfreeze Position).",
                          field=field, code="POSITION_FROZEN")
    account, position = associated_draft(tenant=plan.tenant, cluster=plan.cluster, owner=target.owner, instrument=target.instrument, onchain=onchain_account)
    made = Holding(target.instrument, address, target.owner.address, position=position, draft=(account, position), create=onchain_account is None)
    if made.create:
        plan.rent += associated_rent(plan.cluster, target.instrument)
        plan.instructions.append(ix.create_associated_idempotent(payer=plan.borrower_key, owner=Pubkey.from_string(target.owner.address), instrument=target.instrument))
    plan.holdings[address] = made
    return made


def _instrument(found: FinancialInstrument, expected: FinancialInstrument | None, field: str) -> None:
    if expected is not None and found.pk != expected.pk:
        raise LedgerError("The position holds another financial instrument than the item.", field=field, code="INSTRUMENT_MISMATCH")
    lendable(found, field)


def lendable(instrument: FinancialInstrument, field: str) -> FinancialInstrument:
    """An instrument the lending program can move: movable here, and no transfer hook (the
    program's transfers name no hook accounts: 400 INSTRUMENT_NOT_SUPPORTED)."""
    movable_instrument(instrument, field)
    if "TRANSFER_HOOK" in (instrument.extensions or []):
        raise LedgerError("Instruments with a transfer hook cannot be pledged, lent or repaid: the lending program's transfers carry no hook accounts.",
                          field=field, code="INSTRUMENT_NOT_SUPPORTED")
    return instrument


def amount_of(value: dict, instrument: FinancialInstrument, field: str) -> int:
    return base_units(value, instrument, field=field)


def enough(source: Holding, amount: int, field: str) -> None:
    """400 INSUFFICIENT_FUNDS naming the item's value when the position's balance (as the
    last confirmed transaction left it) is below ``amount`` — the token program would
    refuse the same without saying which item (a position funded earlier in the same
    transaction, transferFrom / mintAsset, is not checked here)."""
    if source.draft is None and source.position is not None:
        balance = int(source.position.account.token_balance or 0)
        if balance < amount:
            raise LedgerError(f"The position holds {balance} base units: not enough for {amount}.", field=field, code="INSUFFICIENT_FUNDS")


# --- before a pledge or a repayment: transferFrom, mintAsset -----------------------------------


def _signer_of(tenant, account: Account | None, address: str, field: str) -> SignerSpec:
    if account is None:
        return SignerSpec(Pubkey.from_string(address), None)
    return signer_for(account, tenant, field=field)


def fund_first(plan: Plan, target: Holding, item: dict, amount: int, field: str) -> None:
    """``mintAsset`` mints ``amount`` (into transferFrom's position when one is named, else
    into the target) and ``transferFrom`` moves it from that position into the target, in the
    same transaction, before the target pledges or repays it."""
    instrument = target.instrument
    program, mint, decimals = ix.program_of(instrument), Pubkey.from_string(instrument.address), int(instrument.decimals)
    source = None
    if item.get("transferFrom"):
        source = holding(plan, item["transferFrom"], f"{field}.transferFrom", owner=None, create=False, instrument=instrument)
        if source.address == target.address:
            raise LedgerError("transferFrom names the item's own position.", field=f"{field}.transferFrom", code="SAME_POSITION")
    if item.get("mintAsset"):
        if not instrument.mint_authority_address:
            raise LedgerError("The mint has no mint authority: its supply is fixed.", field=f"{field}.mintAsset", code="NO_AUTHORITY")
        authority = _signer_of(plan.tenant, instrument.mint_authority if instrument.mint_authority_id else None, instrument.mint_authority_address, f"{field}.mintAsset")
        into = source or target
        plan.instructions.append(mint_to_checked(MintToCheckedParams(program_id=program, mint=mint, dest=Pubkey.from_string(into.address), mint_authority=authority.pubkey,
                                                                     amount=amount, decimals=decimals, signers=[])))
        plan.sign(authority)
    if source is not None:
        owner = source.position.owner
        authority = _signer_of(plan.tenant, owner, source.owner_address, f"{field}.transferFrom")
        plan.instructions.append(transfer_checked(TransferCheckedParams(program_id=program, source=Pubkey.from_string(source.address), mint=mint,
                                                                        dest=Pubkey.from_string(target.address), owner=authority.pubkey, amount=amount, decimals=decimals, signers=[])))
        plan.sign(authority)
        plan.debits.append(Debit(owner, source.position, amount, target.position or plan.borrower, f"{field}.transferFrom"))


def no_funding_steps(item: dict, field: str, why: str) -> None:
    for name in ("transferFrom", "mintAsset"):
        if item.get(name):
            raise LedgerError(f"{name} does not apply here: {why}.", field=f"{field}.{name}", code="NOT_APPLICABLE")


def thaw_escrow_account(plan: Plan, escrow: Pubkey, instrument: FinancialInstrument, field: str) -> None:
    """A frozen-by-default instrument's escrow token account would start frozen and refuse
    the pledge: it is created first and thawed by the freeze authority in the same
    transaction (spec, Create Loan), unless it exists already."""
    if instrument.default_position_state != PositionState.FROZEN:
        return
    address = ix.associated_address(escrow, instrument)
    if _chain_token_account(plan.cluster, str(address), instrument) is not None:
        return
    if not instrument.freeze_authority_address:
        raise LedgerError("The instrument's positions start frozen and it has no freeze authority to unfreeze the escrow's.", field=field, code="NO_AUTHORITY")
    authority = _signer_of(plan.tenant, instrument.freeze_authority if instrument.freeze_authority_id else None, instrument.freeze_authority_address, field)
    plan.instructions.append(ix.create_associated_idempotent(payer=plan.borrower_key, owner=escrow, instrument=instrument))
    plan.instructions.append(thaw_account(ThawAccountParams(program_id=ix.program_of(instrument), account=address, mint=Pubkey.from_string(instrument.address),
                                                            authority=authority.pubkey)))
    plan.sign(authority)
    plan.thawed.append(str(address))


def escrow_holding(plan: Plan, escrow_account: Account, instrument: FinancialInstrument, existing: Position | None) -> Holding:
    """The escrow's token account of a pledged instrument: its position, drafted (PENDING,
    owned by the escrow's record) when this transaction creates the account."""
    address = str(ix.associated_address(escrow_account.address, instrument))
    if address in plan.holdings:
        return plan.holdings[address]
    if existing is not None and existing.status == "ACTIVE":
        made = Holding(instrument, address, escrow_account.address, position=existing)
    else:
        account, position = associated_draft(tenant=plan.tenant, cluster=plan.cluster, owner=escrow_account, instrument=instrument)
        made = Holding(instrument, address, escrow_account.address, position=position, draft=(account, position), create=True)
        plan.rent += associated_rent(plan.cluster, instrument)
    plan.holdings[address] = made
    return made


# --- debit limits -------------------------------------------------------------------------------


def debits_allowed(plan: Plan) -> None:
    """Read phase: 403 DEBIT_NOT_ALLOWED before anything is signed."""
    for debit in plan.debits:
        debit_decision(tenant=plan.tenant, api_key=plan.api_key, kind=TOKEN, source=debit.source, position=debit.position, amount=debit.amount,
                       destination=debit.destination, field=debit.field)


def debits_decided(plan: Plan) -> Decision | None:
    """Write phase: each debit again under its source's row lock (pk order); held when any
    is over a limit."""
    decisions = [debit_decision(tenant=plan.tenant, api_key=plan.api_key, kind=TOKEN, source=d.source, position=d.position, amount=d.amount,
                                destination=d.destination, field=d.field, lock=True)
                 for d in sorted(plan.debits, key=lambda d: d.source.pk)]
    return Decision.merge(*decisions) if decisions else None


# --- build and record --------------------------------------------------------------------------


def build(plan: Plan, operation: str):
    """transaction_build of the plan, the rent of what it creates from the borrower, who
    signs every instruction that creates an account (its network-currency debit keys and
    limits apply, accounts/services.py "Who pays"); a refusal by the lending program names
    the field it is about."""
    funding = None
    if plan.rent:
        payer = {"feePayer": {"offchainId": str(plan.borrower.offchain_id)}}
        funding = funding_signer(tenant=plan.tenant, cluster=plan.cluster, api_key=plan.api_key, svm_config=payer, lamports=plan.rent, destination_type="MANAGED")
    signers = [signer_for(plan.borrower, plan.tenant, field=FEE_PAYER), *plan.signers]
    try:
        prepared = transaction_build(context=plan.ctx, operation=operation, instructions=plan.instructions, signers=signers,
                                     config=transaction_config(plan.tenant, plan.cluster, plan.svm_config))
    except ProgramError as exc:
        exc.field = _refused_field(plan, exc) if exc.failure.program == onchain.PROGRAM else None
        raise
    return prepared, funding


def _refused_field(plan: Plan, exc: ProgramError) -> str:
    """The field a lending program refusal is about: the request item whose instruction the
    program refused (LtvExceeded on the Borrow of itemsToBorrow[1] names that item) where
    the error is about an item, else the error's field (onchain.ERROR_FIELDS)."""
    general = onchain.ERROR_FIELDS.get(exc.failure.name, "itemData")
    item = plan.item_fields.get(_refused_instruction(plan, exc))
    if item is not None and (general == "itemData" or item.startswith(general + "[")):
        return item
    return general


def _refused_instruction(plan: Plan, exc: ProgramError) -> int | None:
    """The index in ``plan.instructions`` of the instruction the program refused: the
    program's n-th top-level invocation in the logs is its n-th instruction of the plan (the
    transaction adds instructions of other programs only: compute budget, nonce advance)."""
    program = exc.failure.program_id
    invoked = 0
    for line in exc.logs:
        if line == f"Program {program} invoke [1]":
            invoked += 1
        elif line.startswith(f"Program {program} failed"):
            break
    ours = [i for i, instruction in enumerate(plan.instructions) if str(instruction.program_id) == program]
    return ours[invoked - 1] if 0 < invoked <= len(ours) else None


def write_drafts(plan: Plan, *, field: str = "itemData") -> list[Position]:
    """Write phase: the drafted positions (saved; PENDING ones await this transaction)."""
    drafted = [h for h in plan.holdings.values() if h.draft is not None]
    for made in drafted:
        position_save_new(*made.draft, field=field)
    return [h.draft[1] for h in drafted if h.create]


def link_created(plan: Plan, tx: Transaction) -> None:
    for made in plan.holdings.values():
        if made.draft is not None and made.create:
            position_link_creation(*made.draft, tx)


def record(plan: Plan, prepared, funding, *, lock, key: str, submit: bool = True, **effects):
    """Write phase, in the house's lock order (loans/locks.py): the debits and the funding
    re-decided under their accounts' row locks, the drafted positions saved, then ``lock()``
    — which locks and re-checks the loan or strategy (or writes a new one) and returns it —
    then the Transaction row (held PENDING_APPROVAL when a debit is over a limit) and the
    record's in-flight marker (named in the effects under ``key``). Returns (record, tx)."""
    decision = debits_decided(plan)
    funded = funding_effects(funding, tenant=plan.tenant, api_key=plan.api_key)
    created = write_drafts(plan)
    target = lock()
    held = decision is not None and decision.needs_approval
    data = {key: str(target.offchain_id), **effects, **(decision.effects if decision is not None else {}), **funded,
            "created": [str(p.offchain_id) for p in created], "thawed": plan.thawed}
    tx = transaction_record(prepared, effects_data=data, api_key=plan.api_key, request_id=plan.ctx.request_id, submit=submit,
                            hold_for_approval=held, hold_reason=decision.reason if held else "")
    link_created(plan, tx)
    target.last_transaction = target.pending_transaction = tx
    target.save(update_fields=["last_transaction", "pending_transaction", "updated_at"])
    sources = [d.position.pk for d in plan.debits]
    if sources:
        Position.objects.for_tenant(plan.tenant).filter(pk__in=sources).update(last_transaction=tx)
    return target, tx


# --- loan state -----------------------------------------------------------------------------------


_NOT_OPEN = {
    LoanStatus.PENDING: ("LOAN_PENDING", "The loan's creation has not been confirmed yet; retry once it is."),
    LoanStatus.FAILED: ("LOAN_NOT_ONCHAIN", "The loan's creation failed: it does not exist on the network."),
    LoanStatus.CLOSED: ("LOAN_CLOSED", "The loan is closed."),
}


def open_loan(loan: Loan, *, field: str = "itemData.escrow", statuses=(LoanStatus.ACTIVE, LoanStatus.REPAID, LoanStatus.LIQUIDATED)) -> Loan:
    """A loan that exists on chain, in one of ``statuses`` (else 400 naming its state), with
    no transaction of it in flight (409 OPERATION_IN_PROGRESS)."""
    if loan.status in _NOT_OPEN:
        code, text = _NOT_OPEN[loan.status]
        raise LedgerError(text, field=field, code=code)
    if loan.status not in statuses:
        raise LedgerError(f"The loan is {loan.status}.", field=field, code=f"LOAN_{loan.status}")
    ensure_no_operation_in_flight(loan, field=field)
    return loan


def read_escrow(cluster: str, loan: Loan, *, field: str = "itemData.escrow"):
    """The escrow as the chain holds it now (items in the program's order); 400
    LOAN_CLOSED when it is gone."""
    escrow = onchain.decode_loan(rpc_for(cluster).account(Pubkey.from_string(loan.escrow_address)), loan.program_address)
    if escrow is None:
        raise LedgerError("The loan's escrow no longer exists on the network (closed).", field=field, code="LOAN_CLOSED")
    return escrow
