"""Lifecycle of positions (docs/positions.md): Update Position (offchain fields; a delegate
approved or revoked), Freeze and Unfreeze Position, Inactivate Position.

Each follows services.position_initialize's path: read and check (the chain decides what
only the chain knows: the balance, the frozen state, the delegate, the close authority),
build and sign with no lock held, then one write phase under the position's row lock that
re-checks what may have changed meanwhile (status, frozen, the in-flight marker) and
records the transaction with the marker set. One transaction-backed change of a position
at a time: a second one gets 409 OPERATION_IN_PROGRESS until the first transaction ends
(instruments.changes.instrument_set_paused does the same for mints). Effects on
confirmation are in positions/effects.py.
"""

from __future__ import annotations

from solders.pubkey import Pubkey
from spl.token.instructions import (
    ApproveCheckedParams,
    CloseAccountParams,
    FreezeAccountParams,
    RevokeParams,
    ThawAccountParams,
    approve_checked,
    close_account,
    freeze_account,
    revoke,
    thaw_account,
)

from accounts.limits import normalize
from accounts.locks import ensure_no_operation_in_flight, lock_account
from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account, AccountStatus
from accounts.services import account_update
from accounts.signers import ensure_usable, signer_for, transaction_config
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from chain.rpc import rpc_for
from transactions.models import Transaction, TransactionEvent
from transactions.services import Prepared, SignerSpec, transaction_build, transaction_record

from . import operations
from . import instructions as ix
from .locks import lock_position
from .models import Position, PositionStatus
from .onchain import TokenAccountState, token_account_at
from .services import PositionResult, check_token_debit_settings, usable_instrument
from .values import display

FIELD = "itemData.position"


# --- shared checks -------------------------------------------------------------------------


def _fresh(tenant, position: Position) -> Position:
    return (
        Position.objects.for_tenant(tenant)
        .select_related("instrument", "owner", "owner__managed_key", "account", "pending_transaction")
        .get(pk=position.pk)
    )


def _on_network(position: Position) -> None:
    """The position's token account exists (its initialization confirmed, not closed)."""
    if position.status == PositionStatus.INACTIVE:
        raise LedgerError("The position is inactive: its token account is closed.", field=FIELD, code="POSITION_INACTIVE")
    if position.status == PositionStatus.FAILED:
        raise LedgerError("The position's token account was never created on the network.", field=FIELD, code="POSITION_NOT_ONCHAIN")
    if position.status == PositionStatus.PENDING:
        raise LedgerError("The position's initialization is still in flight; retry once it is confirmed.", field=FIELD, code="POSITION_PENDING")


def _not_frozen(frozen: bool, what: str) -> None:
    if frozen:
        raise LedgerError(f"The position is frozen: the token program refuses to {what} a frozen token account; unfreeze it first.", field=FIELD, code="POSITION_FROZEN")


def _chain(position: Position) -> tuple[int, TokenAccountState] | None:
    """The token account as the network holds it now (lamports, decoded state); None when
    no token account of the instrument's program is there any more."""
    onchain = rpc_for(position.cluster).account(Pubkey.from_string(position.address))
    state = token_account_at(onchain, program=ix.program_of(position.instrument))
    return (onchain.lamports, state) if state is not None else None


def _chain_state(position: Position) -> tuple[int, TokenAccountState]:
    found = _chain(position)
    if found is None:
        raise LedgerError("The position's token account no longer exists on the network (closed outside the service); inactivate the position.", field=FIELD, code="POSITION_NOT_ONCHAIN")
    return found


def _signer(tenant, cluster: str, address: str, record: Account | None, field: str) -> SignerSpec:
    """The signer of ``address``: with its key when it is a record the tenant may sign
    with, else off platform (the transaction waits PARTIALLY_SIGNED for Sign Transaction)."""
    if record is None or record.address != address:
        record = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=address).select_related("managed_key").first()
    if record is None:
        return SignerSpec(Pubkey.from_string(address), None)
    return signer_for(record, tenant, field=field)


def _owner_signer(tenant, position: Position, state: TokenAccountState, field: str = FIELD) -> SignerSpec:
    """The token account's owner as the chain has it signs (the position's owner record
    when it is that address)."""
    return _signer(tenant, position.cluster, state.owner, position.owner, field)


def _record(locked: Position, prepared: Prepared, ctx: OperationContext, *, requested_by: str | None, **effects) -> Transaction:
    """Write phase: the Transaction row, and the position's in-flight marker set to it."""
    tx = transaction_record(prepared, effects_data={"position": str(locked.offchain_id), **effects}, api_key=ctx.api_key, request_id=ctx.request_id)
    locked.last_transaction = locked.pending_transaction = tx
    locked.save(update_fields=["last_transaction", "pending_transaction", "updated_at"])
    if requested_by:
        # The admin acts without an API key: who asked is recorded on the transaction, as
        # created_by_key records it for the API.
        TransactionEvent.objects.create(transaction=tx, kind="REQUESTED_IN_ADMIN", detail={"user": requested_by})
    return tx


# --- Freeze / Unfreeze ---------------------------------------------------------------------


def _state_error(frozen: bool, where: str = "") -> LedgerError:
    if frozen:
        return LedgerError(f"The position is already frozen{where}.", field=FIELD, code="ALREADY_FROZEN")
    return LedgerError(f"The position is not frozen{where}.", field=FIELD, code="NOT_FROZEN")


def position_set_frozen(ctx: OperationContext, *, position: Position, frozen: bool, authority_lookup: dict | None = None,
                        requested_by: str | None = None) -> PositionResult:
    """Freeze / Unfreeze Position: FreezeAccount / ThawAccount of the token account, signed
    by the mint's freeze authority (SPL Token and Token-2022 alike: the authority is the
    mint's, the freeze is per token account). ``authority_lookup`` (the position lookup's
    freezeAuthority), when given, must name that authority. Frozen on confirmation."""
    tenant, cluster = ctx.tenant, ctx.cluster
    def check(record: Position) -> None:
        _on_network(record)
        if record.frozen == frozen:
            raise _state_error(frozen)
        ensure_no_operation_in_flight(record, field=FIELD)

    position = _fresh(tenant, position)
    check(position)
    instrument = usable_instrument(position.instrument, FIELD)
    authority = instrument.freeze_authority_address
    if not authority:
        raise LedgerError("The financial instrument's mint has no freeze authority: its positions cannot be frozen or unfrozen.", field=FIELD, code="NO_FREEZE_AUTHORITY")
    field = f"{FIELD}.freezeAuthority"
    record = instrument.freeze_authority
    if authority_lookup:
        given = resolve_account(tenant, cluster, authority_lookup, field=field, allow_off_platform=True)
        if given.address != authority:
            raise LedgerError(f"The mint's freeze authority is {authority}.", field=field, code="AUTHORITY_MISMATCH")
        record = None if isinstance(given, OffPlatform) else ensure_usable(given, field=field)
    _, state = _chain_state(position)
    if state.frozen == frozen:
        raise _state_error(frozen, " on the network")
    signer = _signer(tenant, cluster, authority, record, field)
    accounts = {"program_id": ix.program_of(instrument), "account": Pubkey.from_string(position.address), "mint": Pubkey.from_string(instrument.address), "authority": signer.pubkey}
    instruction = freeze_account(FreezeAccountParams(**accounts)) if frozen else thaw_account(ThawAccountParams(**accounts))
    prepared = transaction_build(context=ctx, operation=operations.FREEZE if frozen else operations.UNFREEZE, instructions=[instruction],
                                 signers=[signer], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        locked = lock_position(position.pk, tenant=tenant)
        check(locked)
        tx = _record(locked, prepared, ctx, requested_by=requested_by, frozen=frozen)
    return PositionResult(locked, tx)


# --- Inactivate ----------------------------------------------------------------------------


def _inactivatable(record: Position) -> None:
    if record.status == PositionStatus.INACTIVE:
        raise LedgerError("The position is already inactive.", field=FIELD, code="POSITION_INACTIVE")
    _on_network(record)
    ensure_no_operation_in_flight(record, field=FIELD)


def _mark_inactive(locked: Position, *, tenant) -> None:
    """Write phase: the position and its token account's record as closed."""
    locked.status = PositionStatus.INACTIVE
    locked.frozen, locked.delegate_address, locked.delegated_amount = False, "", 0
    locked.save(update_fields=["status", "frozen", "delegate_address", "delegated_amount", "updated_at"])
    account = lock_account(locked.account_id, tenant=tenant)
    account.status, account.token_balance, account.lamports_balance = AccountStatus.INACTIVE, 0, 0
    account.save(update_fields=["status", "token_balance", "lamports_balance", "updated_at"])


def position_inactivate(ctx: OperationContext, *, position: Position, refund_to: Account | OffPlatform | None,
                        requested_by: str | None = None) -> PositionResult:
    """Inactivate Position: CloseAccount of the token account, its rent to ``refund_to``
    (default: the owner), signed by its close authority (the owner unless one was set).
    The chain decides: a token balance → 400 BALANCE_NOT_ZERO; frozen → 400 POSITION_FROZEN
    (a service rule, see docs/positions.md); no token account any more (closed outside the
    service) → INACTIVE at once, no transaction. INACTIVE on confirmation."""
    tenant, cluster = ctx.tenant, ctx.cluster
    position = _fresh(tenant, position)
    _inactivatable(position)
    field = "itemData.refundDestination"
    if refund_to is None:
        destination = position.owner_address
    elif isinstance(refund_to, OffPlatform):
        destination = refund_to.address
    else:
        destination = ensure_usable(refund_to, field=field).address
    if destination == position.address:
        raise LedgerError("The refund destination is the token account being closed.", field=field, code="INVALID")

    found = _chain(position)
    if found is None:
        with write_phase():
            locked = lock_position(position.pk, tenant=tenant)
            _inactivatable(locked)
            _mark_inactive(locked, tenant=tenant)
        return PositionResult(locked, None)
    _, state = found
    _not_frozen(state.frozen or position.frozen, "close")
    if state.amount:
        raise LedgerError(f"The position holds {display(state.amount, position.instrument)} ({state.amount} base units) on the network; "
                          "only an empty token account can be closed: burn or transfer the balance first.", field=FIELD, code="BALANCE_NOT_ZERO")
    if state.close_authority:
        signer = _signer(tenant, cluster, state.close_authority, None, FIELD)
    else:
        signer = _owner_signer(tenant, position, state)
    instruction = close_account(CloseAccountParams(program_id=ix.program_of(position.instrument), account=Pubkey.from_string(position.address),
                                                   dest=Pubkey.from_string(destination), owner=signer.pubkey))
    prepared = transaction_build(context=ctx, operation=operations.INACTIVATE, instructions=[instruction],
                                 signers=[signer], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        locked = lock_position(position.pk, tenant=tenant)
        _inactivatable(locked)
        _not_frozen(locked.frozen, "close")
        tx = _record(locked, prepared, ctx, requested_by=requested_by, refundDestination=destination)
    return PositionResult(locked, tx)


# --- Update --------------------------------------------------------------------------------


def _delegate_checks(record: Position) -> None:
    _on_network(record)
    ensure_no_operation_in_flight(record, field=FIELD)
    _not_frozen(record.frozen, "approve or revoke a delegate of")


def _delegate_build(ctx: OperationContext, *, position: Position, delegate: dict | None) -> tuple[Prepared, dict]:
    """Read and network phase of a delegate change: ApproveChecked (``delegate`` given) or
    Revoke (null), signed by the owner. Returns the prepared transaction and its effects."""
    tenant, cluster = ctx.tenant, ctx.cluster
    from .values import base_units

    _delegate_checks(position)
    instrument = usable_instrument(position.instrument, FIELD)
    _, state = _chain_state(position)
    _not_frozen(state.frozen, "approve or revoke a delegate of")
    owner = _owner_signer(tenant, position, state)
    program, source = ix.program_of(instrument), Pubkey.from_string(position.address)
    field = "itemData.delegate"
    if delegate is None:
        if state.delegate is None:
            raise LedgerError("The position has no delegate to revoke.", field=field, code="NO_DELEGATE")
        instruction = revoke(RevokeParams(program_id=program, account=source, owner=owner.pubkey))
        operation, effects = operations.REVOKE, {"delegate": None}
    else:
        target = resolve_account(tenant, cluster, delegate["account"], field=f"{field}.account", allow_off_platform=True)
        if not isinstance(target, OffPlatform):
            ensure_usable(target, field=f"{field}.account")
        if target.address == position.address:
            raise LedgerError("A token account cannot be its own delegate.", field=f"{field}.account", code="INVALID")
        amount = base_units(delegate["value"], instrument, field=f"{field}.value")
        instruction = approve_checked(ApproveCheckedParams(program_id=program, source=source, mint=Pubkey.from_string(instrument.address),
                                                           delegate=Pubkey.from_string(target.address), owner=owner.pubkey, amount=amount, decimals=instrument.decimals))
        operation, effects = operations.APPROVE, {"delegate": {"onchainId": target.address, "lamports": amount}}
    prepared = transaction_build(context=ctx, operation=operation, instructions=[instruction], signers=[owner],
                                 config=transaction_config(tenant, cluster, ctx.svm_config))
    return prepared, effects


def position_update(ctx: OperationContext, *, position: Position, changes: dict) -> PositionResult:
    """Update Position: patch semantics, only the fields present change. Offchain fields
    (the token account's offchainReferences, tokenDebitLimits, tokenDebitApiKeys) change in
    the write phase under the position's row lock; ``delegate`` approves (ApproveChecked)
    or, null, revokes on the network, one delegate change in flight at a time, and the
    record's delegate follows the chain on confirmation."""
    tenant = ctx.tenant
    p = "itemData"
    position = _fresh(tenant, position)
    check_token_debit_settings(ctx.api_key, changes, position.owner, p, present=True)
    refs = dict(changes.get("offchainReferences") or {})
    if refs.get("type") and refs["type"] != position.account.type:
        raise LedgerError(f"A position in this instrument is a {position.account.type}; its type cannot change.", field=f"{p}.offchainReferences.type", code="INVALID_ACCOUNT_TYPE")
    refs.pop("type", None)
    prepared, effects = None, {}
    if "delegate" in changes:
        prepared, effects = _delegate_build(ctx, position=position, delegate=changes["delegate"])

    tx = None
    with write_phase(on_abort=prepared.release if prepared else None):
        locked = lock_position(position.pk, tenant=tenant)
        if prepared is not None:
            _delegate_checks(locked)
        fields = []
        if "tokenDebitLimits" in changes:
            locked.token_debit_limits = normalize(changes["tokenDebitLimits"]) if changes["tokenDebitLimits"] is not None else None
            fields.append("token_debit_limits")
        if "tokenDebitApiKeys" in changes:
            locked.token_debit_api_keys = list(changes["tokenDebitApiKeys"] or [])
            fields.append("token_debit_api_keys")
        if fields:
            locked.save(update_fields=[*fields, "updated_at"])
        if refs:
            account_update(ctx, account=locked.account, changes={"offchainReferences": refs})
        if prepared is not None:
            tx = _record(locked, prepared, ctx, requested_by=None, **effects)
    return PositionResult(locked, tx)
