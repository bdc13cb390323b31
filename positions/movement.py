"""Token movements of positions: Mint, Burn, Transfer Financial Instrument and Trade
(docs/positions.md, "Moving tokens").

Every operation has the shape of the house (docs/transactions.md, "Path of a mutation"):

1. read phase — resolve the lookups into legs (who sends, who receives, how much, who
   signs), refuse what the service can tell is bound to fail (closed, paused or
   confidential instruments, positions that are pending, failed, inactive or frozen,
   authorities that are not the mint's / the position's) with clear codes;
2. network phase — rent funding for token accounts created on the way, then
   ``transaction_build`` (simulation is the backstop: insufficient balance, a paused
   mint or a frozen account the records did not know of yet come back as 400
   TRANSACTION_SIMULATION_FAILED with the program's reason; nothing is stored);
3. write phase — lock the source positions, re-check what the read phase relied on,
   store drafted destination positions and the Transaction row, whose ``effects`` say
   what moves (positions/movement_effects.py applies the supply once on confirmation).

Debit limits and approvals (positions/limits.py) apply to every transfer leg (Transfer,
Trade): decided in the read phase (403 DEBIT_NOT_ALLOWED before anything is signed) and
again in the write phase under the debited owners' row locks, taken first and in pk order
(then the source positions): the order the confirmation effects lock in (accounts, then
positions), so a write phase and an effects transaction never wait on each other in a
cycle. Over a limit the transaction is recorded held, PENDING_APPROVAL. Mints and burns
debit no one's holdings to another party and have no limits.
"""

from __future__ import annotations


from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey
from spl.token.instructions import (
    BurnCheckedParams,
    MintToCheckedParams,
    TransferCheckedParams,
    burn_checked,
    mint_to_checked,
    transfer_checked,
)

from accounts.locks import lock_visible_account
from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account
from accounts.services import funding_effects, funding_signer
from accounts.signers import ensure_usable, signer_for, transaction_config
from instruments.allowlist.chain import ensure_owner_allowed
from instruments.models import FinancialInstrument, PositionState
from instruments.token2022.transfer_hook import HookAccountsError, transfer_hook_accounts
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from ledger_project.statements import Statement
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import operations
from . import instructions as ix
from .limits import TOKEN, Decision, debit_decision
from .locks import lock_positions
from .lookup import OwnerTarget, resolve_position
from .models import Position
from .checks import live_position, movable_instrument
from .onchain import token_account_at
from .plan import BURN, MINT, TRADE, TRANSFER, Leg, MovementResult, Party, _Plan
from .render import position_identifiers
from .services import associated_draft, associated_rent, position_link_creation, position_save_new
from .values import base_units

#: Funding destination types, strictest first (accounts/limits.py): rent of a token
#: account created for an off-platform owner leaves the organization's control.
_STRICTNESS = ("OFF_PLATFORM", "NON_MANAGED", "MANAGED")


# --- read phase: checks (shared ones: positions/checks.py) -------------------------------


def _no_authority_fields(lookup: dict, field: str, allowed: tuple[str, ...] = ()) -> None:
    for name in ("mintAuthority", "freezeAuthority"):
        if lookup.get(name) and name not in allowed:
            raise LedgerError(f"{name} does not apply to this operation.", field=f"{field}.{name}", code="NOT_APPLICABLE")


def _same_instrument(found: FinancialInstrument, expected: FinancialInstrument, field: str) -> None:
    if found.pk != expected.pk:
        raise LedgerError("The destination holds another financial instrument than the source.", field=field, code="INSTRUMENT_MISMATCH")


# --- read phase: resolving --------------------------------------------------------------------


def _source(tenant, cluster: str, lookup: dict, field: str, role: str = "send") -> Position:
    _no_authority_fields(lookup, field)
    position = resolve_position(tenant, cluster, lookup, field=field)
    movable_instrument(position.instrument, field)
    return live_position(position, field, role)


def _chain_state(cluster: str, address: str, instrument: FinancialInstrument):
    """The token account at ``address`` and its decoded state; (None, None) when there is
    none — also when only lamports were sent there (a system account: the ATA program
    creates the token account over it)."""
    account = rpc_for(cluster).account(Pubkey.from_string(address))
    state = token_account_at(account, program=ix.program_of(instrument))
    return (account, state) if state is not None else (None, None)


def _destination(plan: _Plan, tenant, cluster: str, lookup: dict, field: str, *, instrument: FinancialInstrument | None, create: bool, off_platform: bool, allowed: tuple[str, ...] = ()) -> Party:
    """The receiving end: a live position, or — with ``create`` — the owner's associated
    token account created idempotently by this transaction (recorded PENDING, or
    onboarded when the network already has it), or — with ``off_platform`` — the
    associated token account of an address the service does not know (no records)."""
    _no_authority_fields(lookup, field, allowed)
    found = resolve_position(tenant, cluster, lookup, field=field, allow_missing=create, allow_off_platform_owner=off_platform)
    if isinstance(found, Position):
        if instrument is not None:
            _same_instrument(found.instrument, instrument, f"{field}.financialInstrument" if lookup.get("financialInstrument") else field)
        movable_instrument(found.instrument, field)
        live_position(found, field, "receive")
        if plan.kind != MINT:  # minting invokes no hook: the issuer may still credit a listed-then-removed holder
            ensure_owner_allowed(found.instrument, found.owner_address, field=field)
        return plan.parties.setdefault(found.address, Party(found.address, found.owner_address, position=found))
    target: OwnerTarget = found
    if instrument is not None:
        _same_instrument(target.instrument, instrument, f"{field}.financialInstrument")
    movable_instrument(target.instrument, f"{field}.financialInstrument")
    owner_address = target.owner.address
    ensure_owner_allowed(target.instrument, owner_address, field=f"{field}.owner" if lookup.get("owner") else field)
    address = str(ix.associated_address(owner_address, target.instrument))
    if address in plan.parties:  # a trade's second leg to the same new position
        return plan.parties[address]
    onchain, state = _chain_state(cluster, address, target.instrument)
    if state is not None and (state.mint != target.instrument.address or state.owner != owner_address):
        raise LedgerError("The token account on the network belongs to another mint or owner.", field=field, code="ACCOUNT_MISMATCH")
    if (state.frozen if state is not None else target.instrument.default_position_state == PositionState.FROZEN):
        why = "is frozen" if state is not None else "would start frozen (the instrument's defaultPositionState is FROZEN)"
        raise LedgerError(f"The destination's token account {why}: it cannot receive until it is unfrozen.", field=field, code="POSITION_FROZEN")
    if isinstance(target.owner, OffPlatform):
        party = Party(address, owner_address, create=onchain is None, funding_type="OFF_PLATFORM")
    else:
        ensure_usable(target.owner, field=f"{field}.owner")
        account, position = associated_draft(tenant=tenant, cluster=cluster, owner=target.owner, instrument=target.instrument, onchain=onchain)
        party = Party(address, owner_address, position=position, draft=(account, position), create=onchain is None)
    plan.parties[address] = party
    return party


def _signer(tenant, cluster: str, lookup: dict, field: str) -> tuple[str, SignerSpec]:
    """An authority named by a lookup: its key signs here when the organization may use
    it; any other signer (not managed, off platform) leaves the transaction
    PARTIALLY_SIGNED for Sign Transaction."""
    resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
    if isinstance(resolved, OffPlatform):
        return resolved.address, SignerSpec(Pubkey.from_string(resolved.address), None)
    return resolved.address, signer_for(resolved, tenant, field=field)


def _recorded_signer(account: Account | None, address: str, tenant, field: str) -> SignerSpec:
    if account is None:
        return SignerSpec(Pubkey.from_string(address), None)
    return signer_for(account, tenant, field=field)


def _mint_authority(tenant, cluster: str, instrument: FinancialInstrument, lookup: dict | None, field: str) -> SignerSpec:
    address = instrument.mint_authority_address
    if not address:
        raise LedgerError("The mint has no mint authority: its supply is fixed.", field=field, code="NO_AUTHORITY")
    if lookup:
        given, signer = _signer(tenant, cluster, lookup, field)
        if given != address:
            raise LedgerError(f"The mint's mint authority is {address}.", field=field, code="AUTHORITY_MISMATCH")
        return signer
    return _recorded_signer(instrument.mint_authority, address, tenant, field)


def _debit_authority(tenant, cluster: str, position: Position, lookup: dict | None, field: str) -> SignerSpec:
    """Who signs a burn or transfer from ``position``: its owner (the default), its
    delegate (within the delegated amount) or the instrument's permanent delegate
    (Token-2022 PERMANENT_DELEGATE: any position of the instrument)."""
    if not lookup:
        return _recorded_signer(position.owner, position.owner_address, tenant, field)
    allowed = {position.owner_address}
    if position.delegate_address:
        allowed.add(position.delegate_address)
    permanent = position.instrument.permanent_delegate_authority_address
    if permanent and "PERMANENT_DELEGATE" in (position.instrument.extensions or []):
        allowed.add(permanent)
    given, signer = _signer(tenant, cluster, lookup, field)
    if given not in allowed:
        raise LedgerError("The authority must be the position's owner, its delegate or the instrument's permanent delegate.", field=field, code="AUTHORITY_MISMATCH")
    return signer


def _transfer_leg(plan: _Plan, tenant, cluster: str, data: dict, prefix: str) -> Leg:
    source = _source(tenant, cluster, data["source"], f"{prefix}.source")
    instrument = source.instrument
    destination = _destination(plan, tenant, cluster, data["destination"], f"{prefix}.destination", instrument=instrument, create=True, off_platform=True)
    if destination.address == source.address:
        raise LedgerError("The source and the destination are the same position.", field=f"{prefix}.destination", code="SAME_POSITION")
    amount = base_units(data["value"], instrument, field=f"{prefix}.value")
    authority = _debit_authority(tenant, cluster, source, data.get("authority"), f"{prefix}.authority")
    source_party = plan.parties.setdefault(source.address, Party(source.address, source.owner_address, position=source))
    return Leg(TRANSFER, instrument, amount, authority, source=source_party, destination=destination, field=prefix)


# --- network phase ------------------------------------------------------------------------------


def _fetch(cluster: str):
    rpc = rpc_for(cluster)

    def fetch(address: Pubkey) -> bytes | None:
        account = rpc.account(address)
        return bytes(account.data) if account is not None else None

    return fetch


def _movement_instruction(leg: Leg, cluster: str) -> Instruction:
    instrument = leg.instrument
    program, mint, decimals = ix.program_of(instrument), Pubkey.from_string(instrument.address), int(instrument.decimals)
    authority = leg.authority.pubkey
    if leg.kind == MINT:
        return mint_to_checked(MintToCheckedParams(program_id=program, mint=mint, dest=Pubkey.from_string(leg.destination.address), mint_authority=authority, amount=leg.amount, decimals=decimals, signers=[]))
    source = Pubkey.from_string(leg.source.address)
    if leg.kind == BURN:
        return burn_checked(BurnCheckedParams(program_id=program, mint=mint, account=source, owner=authority, amount=leg.amount, decimals=decimals, signers=[]))
    destination = Pubkey.from_string(leg.destination.address)
    instruction = transfer_checked(TransferCheckedParams(program_id=program, source=source, mint=mint, dest=destination, owner=authority, amount=leg.amount, decimals=decimals, signers=[]))
    hook = instrument.transfer_hook_program_address if "TRANSFER_HOOK" in (instrument.extensions or []) else ""
    if hook:
        try:
            extra = transfer_hook_accounts(program=Pubkey.from_string(hook), mint=mint, source=source, destination=destination, authority=authority, amount=leg.amount, fetch=_fetch(cluster))
        except HookAccountsError as exc:
            raise LedgerError(f"The transfer hook's extra accounts cannot be resolved: {exc}", field=leg.field, code="TRANSFER_HOOK_UNRESOLVED") from exc
        instruction = Instruction(instruction.program_id, instruction.data, [*instruction.accounts, *extra])
    return instruction


def _build(plan: _Plan, ctx: OperationContext, *, operation: str | None = None):
    tenant, cluster = ctx.tenant, ctx.cluster
    creations = [p for p in plan.parties.values() if p.create]
    funding = None
    instructions: list[Instruction] = []
    signers: list[SignerSpec] = []
    if creations:
        # Rent of token accounts created on the way comes from the funding account, never
        # the platform fee payer (docs/accounts.md, "Who pays"); one funder for all of them,
        # checked under the strictest destination type among them.
        instruments = {p.address: _party_instrument(plan, p) for p in creations}
        rent = sum(associated_rent(cluster, instruments[p.address]) for p in creations)
        kind = min((p.funding_type for p in creations), key=_STRICTNESS.index)
        funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent, destination_type=kind)
        signers.append(funding.signer)
        for party in creations:
            instructions.append(ix.create_associated_idempotent(payer=funding.pubkey, owner=Pubkey.from_string(party.owner_address), instrument=instruments[party.address]))
    for leg in plan.legs:
        instructions.append(_movement_instruction(leg, cluster))
        signers.append(leg.authority)
    # A reference key (read-only, not a signer: the token programs ignore accounts past an
    # ordinary owner's, Solana Pay's technique) on the first movement makes every request
    # its own transaction: two equal mints or transfers built within one blockhash would
    # otherwise be the same message, executed once (the second refused as a duplicate).
    first = len(instructions) - len(plan.legs)
    head = instructions[first]
    instructions[first] = Instruction(head.program_id, head.data, [*head.accounts, AccountMeta(plan.reference, is_signer=False, is_writable=False)])
    # ``operation``: a caller packing several requests' legs names its own (positions/batches.py).
    prepared = transaction_build(context=ctx, operation=operation or operations.OF_MOVEMENT[plan.kind], instructions=instructions, signers=signers, config=transaction_config(tenant, cluster, ctx.svm_config))
    return prepared, funding


def _party_instrument(plan: _Plan, party: Party) -> FinancialInstrument:
    return next(leg.instrument for leg in plan.legs if party in (leg.source, leg.destination))


# --- write phase --------------------------------------------------------------------------------


def _debits(plan: _Plan, tenant, api_key, *, positions: dict[int, Position] | None = None, owners: dict[int, Account] | None = None) -> Decision | None:
    """The debit-limit decision of every transfer leg (positions/limits.py), merged: held
    when any leg is over a limit. ``positions``/``owners``: the rows locked in the write
    phase (fresh limits and windows); None in the read phase."""
    decisions = []
    for leg in plan.legs:
        if leg.kind != TRANSFER:
            continue
        position = (positions or {}).get(leg.source.position.pk) or leg.source.position
        # Not .get(id, position.owner): the default would load the owner once more.
        owner = (owners or {}).get(position.owner_id) or position.owner
        destination = leg.destination.position if leg.destination.position is not None else OffPlatform(leg.destination.owner_address)
        decisions.append(debit_decision(tenant=tenant, api_key=api_key, kind=TOKEN, source=owner, position=position, amount=leg.amount, destination=destination, field=f"{leg.field}.source"))
    return Decision.merge(*decisions) if decisions else None


def _lock_debited_accounts(plan: _Plan, tenant, funding) -> dict[int, Account]:
    """Write phase, first: the owners whose limits a transfer leg uses and the rent funder,
    locked together in pk order (an owner may be another organization's shared account:
    visible, never written; funding_effects then finds the funder's row already locked)."""
    pks = {leg.source.position.owner_id for leg in plan.legs if leg.kind == TRANSFER}
    if funding is not None and funding.funder is not None:
        pks.add(funding.funder.pk)
    return {pk: lock_visible_account(pk, tenant=tenant) for pk in sorted(pks)}


_RECHECK = Statement("positions.movement.recheck")


def _reread(plan: _Plan, tenant) -> tuple[list[Position], dict[int, FinancialInstrument]]:
    """The rows the write phase re-checks without locking them — the receiving positions
    and the instruments — read before the row locks are taken: the locks are held until
    the commit, and every request moving from the same source queues behind them."""
    receiving = [leg.destination.position.pk for leg in plan.legs if leg.destination is not None and leg.destination.position is not None and leg.destination.draft is None]
    destinations = _RECHECK.fetch(Position.objects.for_tenant(tenant).filter(pk__in=receiving).order_by())
    instruments = _RECHECK.fetch(FinancialInstrument.objects.visible_to(tenant).filter(pk__in=[leg.instrument.pk for leg in plan.legs]).order_by())
    return destinations, {i.pk: i for i in instruments}


def _recheck(plan: _Plan, tenant, reread: tuple[list[Position], dict[int, FinancialInstrument]]) -> dict[int, Position]:
    """Under the source rows' lock: what the read phase relied on still holds (a freeze,
    pause or inactivation recorded meanwhile is refused here as it was there), the sources
    first, then the re-read destinations and instruments (``_reread``). Returns the locked
    source positions."""
    destinations, fresh = reread
    sources = {leg.source.position.pk: leg for leg in plan.legs if leg.source is not None}
    # The position rows alone: a join would lock the instrument's row too (FOR UPDATE locks
    # every joined row on PostgreSQL), and every movement of the instrument would queue on it.
    locked = lock_positions(*sources, tenant=tenant)
    for pk, leg in sources.items():
        live_position(locked[pk], f"{leg.field}.source" if leg.kind == TRANSFER else f"{leg.field}.position", "send")
    # Destinations are re-read, not locked: receiving needs no limit, and a hot receiving
    # position (a treasury) would otherwise serialize every transfer to it.
    receiving = {leg.destination.position.pk: leg for leg in plan.legs if leg.destination is not None and leg.destination.position is not None and leg.destination.draft is None}
    for position in destinations:
        leg = receiving[position.pk]
        live_position(position, f"{leg.field}.destination" if leg.kind == TRANSFER else f"{leg.field}.position", "receive")
    instruments = {leg.instrument.pk: leg for leg in plan.legs}
    for instrument in fresh.values():
        movable_instrument(instrument, instruments[instrument.pk].field)
    for position in locked.values():  # the debit decision reads the instrument's decimals
        if position.instrument_id in fresh:
            position.instrument = fresh[position.instrument_id]
    return locked


def _effects(plan: _Plan, funded: dict, decision: Decision | None) -> dict:
    recorded = [p.position for p in plan.parties.values() if p.position is not None]
    return {
        **(decision.effects if decision is not None else {}),
        "positions": [str(p.offchain_id) for p in recorded],
        "created": [str(p.draft[1].offchain_id) for p in plan.parties.values() if p.draft is not None and p.create],
        "movement": {
            "kind": plan.kind,
            "reference": str(plan.reference),
            # Amounts are strings: base units go up to u64, past what every JSON reader keeps exact.
            "legs": [
                {
                    "instrument": str(leg.instrument.offchain_id), "mint": leg.instrument.address, "amount": str(leg.amount),
                    "decimals": int(leg.instrument.decimals), "authority": str(leg.authority.pubkey),
                    "source": leg.source.describe() if leg.source is not None else None,
                    "destination": leg.destination.describe() if leg.destination is not None else None,
                }
                for leg in plan.legs
            ],
        },
        **funded,
    }


def _write(plan: _Plan, prepared, funding, ctx: OperationContext) -> Transaction:
    tenant, api_key = ctx.tenant, ctx.api_key
    with write_phase(on_abort=prepared.release):
        reread = _reread(plan, tenant)
        owners = _lock_debited_accounts(plan, tenant, funding)
        sources = _recheck(plan, tenant, reread)
        decision = _debits(plan, tenant, api_key, positions=sources, owners=owners)
        funded = funding_effects(funding, tenant=tenant, api_key=api_key)
        drafted = [p for p in plan.parties.values() if p.draft is not None]
        for party in drafted:
            position_save_new(*party.draft, field=_party_field(plan, party))
        held = decision is not None and decision.needs_approval
        tx = transaction_record(prepared, effects_data=_effects(plan, funded, decision), api_key=api_key, request_id=ctx.request_id, hold_for_approval=held, hold_reason=decision.reason if held else "")
        for party in drafted:
            if party.create:
                position_link_creation(*party.draft, tx)
        # Only the rows this write phase locked (the sources): writing a receiving position
        # here would lock it after the sources, and two transfers in opposite directions
        # would deadlock on PostgreSQL. Receivers get last_transaction when the confirmation
        # moves their balance (positions/balances.py).
        Position.objects.for_tenant(tenant).filter(pk__in=list(sources)).update(last_transaction=tx)
    return tx


def _party_field(plan: _Plan, party: Party) -> str:
    leg = next(leg for leg in plan.legs if leg.destination is party)
    return f"{leg.field}.destination" if leg.kind == TRANSFER else f"{leg.field}.position"


def _run(plan: _Plan, ctx: OperationContext) -> Transaction:
    _debits(plan, ctx.tenant, ctx.api_key)  # 403 DEBIT_NOT_ALLOWED before anything is signed
    prepared, funding = _build(plan, ctx)
    return _write(plan, prepared, funding, ctx)


def _created(plan: _Plan) -> bool:
    return any(p.draft is not None for p in plan.parties.values())


# --- operations ---------------------------------------------------------------------------------


def position_mint(ctx: OperationContext, *, lookup: dict, value: dict, create_if_missing: bool = False) -> MovementResult:
    """Mint: MintToChecked into the position, signed by the instrument's mint authority
    (``lookup.mintAuthority`` may name it; it must be the mint's). With
    ``createIfMissing``, an owner + instrument lookup without a position creates the
    owner's associated token account in the same transaction (recorded PENDING)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData.position"
    plan = _Plan(MINT, [])
    destination = _destination(plan, tenant, cluster, lookup, p, instrument=None, create=create_if_missing, off_platform=False, allowed=("mintAuthority",))
    instrument = destination.position.instrument
    amount = base_units(value, instrument, field="itemData.value")
    authority = _mint_authority(tenant, cluster, instrument, lookup.get("mintAuthority"), f"{p}.mintAuthority")
    plan.legs.append(Leg(MINT, instrument, amount, authority, destination=destination, field="itemData"))
    tx = _run(plan, ctx)
    return MovementResult(destination.identifiers, tx, _created(plan))


def position_burn(ctx: OperationContext, *, lookup: dict, value: dict, authority_lookup: dict | None = None) -> MovementResult:
    """Burn: BurnChecked from the position, signed by its owner (default), its delegate
    or the instrument's permanent delegate (``authority``)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData.position"
    position = _source(tenant, cluster, lookup, p, role="burn")
    amount = base_units(value, position.instrument, field="itemData.value")
    authority = _debit_authority(tenant, cluster, position, authority_lookup, "itemData.authority")
    source = Party(position.address, position.owner_address, position=position)
    plan = _Plan(BURN, [Leg(BURN, position.instrument, amount, authority, source=source, field="itemData")], {position.address: source})
    tx = _run(plan, ctx)
    return MovementResult(position_identifiers(position), tx, False)


def position_transfer(ctx: OperationContext, *, data: dict) -> MovementResult:
    """Transfer Financial Instrument: TransferChecked from ``source`` to ``destination``
    (an existing position, the owner's associated position created on the way, or an
    off-platform owner's associated token account), with a transfer hook's extra
    accounts when the mint has one."""
    tenant, cluster = ctx.tenant, ctx.cluster
    plan = _Plan(TRANSFER, [])
    leg = _transfer_leg(plan, tenant, cluster, data, "itemData")
    plan.legs.append(leg)
    tx = _run(plan, ctx)
    return MovementResult(leg.destination.identifiers, tx, _created(plan))


def position_trade(ctx: OperationContext, *, legs: list[dict]) -> MovementResult:
    """Trade (delivery versus payment): every leg is a transfer, all in one transaction,
    so either every leg settles or none does. Each leg's authority signs; a party whose
    key the service may not use leaves the trade PARTIALLY_SIGNED."""
    tenant, cluster = ctx.tenant, ctx.cluster
    plan = _Plan(TRADE, [])
    for i, data in enumerate(legs):
        plan.legs.append(_transfer_leg(plan, tenant, cluster, data, f"itemData.legs[{i}]"))
    tx = _run(plan, ctx)
    # The trade is named by its transaction; its signature stays undisclosed while held for
    # approval, as in the transaction result (transactions/serializers.py).
    return MovementResult({"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": str(tx.offchain_id)}, tx, _created(plan))
