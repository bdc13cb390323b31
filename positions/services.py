"""Writes of the positions area (docs/positions.md): read and check, build and sign
(network phase, no locks), then one write phase (docs/style.md, "Intent before effect"; docs/transactions.md)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from spl.token.instructions import InitializeAccount3Params, initialize_account3

from custody import services as custody
from accounts.limits import normalize
from accounts.lookup import OffPlatform
from accounts.models import WALLET_TYPES, Account, AccountStatus, AccountType
from accounts.services import account_save, funding_effects, funding_signer
from accounts.signers import ensure_usable, transaction_config
from instruments.allowlist.chain import ensure_owner_allowed
from instruments.models import FinancialInstrument, InstrumentStatus, PositionState
from ledger_project.api.errors import ConflictError, LedgerError, NotFoundError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from tenancy.permissions import require_role
from tenancy.roles import Role
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import operations
from . import instructions as ix
from .models import Position, PositionStatus


@dataclass
class PositionResult:
    position: Position
    transaction: Transaction | None


def position_account_type(instrument: FinancialInstrument) -> str:
    """FUNDS_TOKEN_ACCOUNT for currency instruments, ASSET_TOKEN_ACCOUNT otherwise (the
    instrument's alId category, spec: alId rule)."""
    return AccountType.FUNDS_TOKEN_ACCOUNT if instrument.al_category == "FX" else AccountType.ASSET_TOKEN_ACCOUNT


def usable_instrument(instrument: FinancialInstrument, field: str) -> FinancialInstrument:
    if instrument.status == InstrumentStatus.CLOSED:
        raise LedgerError("The financial instrument is closed.", field=field, code="INSTRUMENT_CLOSED")
    if instrument.status in (InstrumentStatus.FAILED, InstrumentStatus.PENDING):
        raise LedgerError("The financial instrument is not on the network (yet).", field=field, code="INSTRUMENT_NOT_ONCHAIN")
    return instrument


def check_token_debit_settings(api_key, data: dict, owner: Account, prefix: str, *, present: bool = False) -> None:
    """The position's debit settings (Initialize and Update): tokenDebitApiKeys needs role
    PLATFORM_UPDATE_DEBIT_API_KEYS — given at all when ``present`` (an Update clearing the
    list widens who may debit as much as setting it narrows), else when not null — and
    tokenDebitLimits apply only to positions of wallet-type owners."""
    if ("tokenDebitApiKeys" in data) if present else (data.get("tokenDebitApiKeys") is not None):
        require_role(api_key, Role.PLATFORM_UPDATE_DEBIT_API_KEYS, field=f"{prefix}.tokenDebitApiKeys", why="set tokenDebitApiKeys")
    if data.get("tokenDebitLimits") is not None and owner.type not in WALLET_TYPES:
        raise LedgerError("tokenDebitLimits apply to positions of WALLET, ASSETS_WALLET, CURRENCIES_WALLET and DEFI_SETTLEMENT_WALLET owners.", field=f"{prefix}.tokenDebitLimits", code="LIMITS_NOT_APPLICABLE")


def _reference_conflicts(tenant, cluster: str, refs: dict, prefix: str) -> None:
    queryset = Account.objects.for_tenant(tenant).filter(cluster=cluster)
    for key, column in (("code", "code"), ("alId", "al_id")):
        if refs.get(key) and queryset.filter(**{column: refs[key]}).exists():
            raise ConflictError(f"An account with this {key} already exists.", field=f"{prefix}.offchainReferences.{key}", code="DUPLICATE_REFERENCE")


def _existing_position(tenant, cluster: str, address: str) -> Position | None:
    """A live position at ``address``: FAILED and INACTIVE ones are re-initialized in place."""
    return Position.objects.for_tenant(tenant).filter(cluster=cluster, address=address).exclude(status__in=[PositionStatus.FAILED, PositionStatus.INACTIVE]).first()


def _draft(*, tenant, cluster: str, owner: Account, instrument: FinancialInstrument, address: str, data: dict, managed_key=None, already: bool) -> tuple[Account, Position]:
    refs = data.get("offchainReferences") or {}
    account_type = position_account_type(instrument)
    if refs.get("type") and refs["type"] != account_type:
        raise LedgerError(f"A position in this instrument is a {account_type}.", field="itemData.offchainReferences.type", code="INVALID_ACCOUNT_TYPE")
    account = Account(
        tenant=tenant, cluster=cluster, address=address, managed=managed_key is not None, managed_key=managed_key, type=account_type,
        status=AccountStatus.ACTIVE if already else AccountStatus.PENDING, code=refs.get("code") or "", al_id=refs.get("alId") or "",
        organization_external_id=refs.get("organizationExternalId") or "", account_number=refs.get("accountNumber") or "",
        name=refs.get("name") or "", was_onchain_already=already, private_key_location=[managed_key.location] if managed_key else [],
        token_balance=0, token_decimals=instrument.decimals, can_pay_fees=False,
    )
    position = Position(
        tenant=tenant, cluster=cluster, address=address, owner=owner, owner_address=owner.address, instrument=instrument,
        associated=managed_key is None, status=PositionStatus.ACTIVE if already else PositionStatus.PENDING,
        frozen=instrument.default_position_state == PositionState.FROZEN, was_onchain_already=already,
        token_debit_limits=normalize(data["tokenDebitLimits"]) if data.get("tokenDebitLimits") is not None else None,
        token_debit_api_keys=data.get("tokenDebitApiKeys") or [],
    )
    return account, position


def _save(account: Account, position: Position, *, field: str = "itemData") -> None:
    """Write phase: the token account's record, then the position (409 when a concurrent
    request took the address or the owner's associated position meanwhile). A FAILED or
    INACTIVE position at the same address (a failed initialization, a closed account) is
    initialized again in place: its rows and history stay, with the new state."""
    old = Position.objects.for_tenant(position.tenant).select_for_update().filter(cluster=position.cluster, address=position.address).first()
    if old is not None:
        if old.status not in (PositionStatus.FAILED, PositionStatus.INACTIVE):
            raise ConflictError("The owner already has a position in this financial instrument.", field=field, code="DUPLICATE_POSITION")
        account.pk, account.offchain_id, account.created_at = old.account_id, old.account.offchain_id, old.account.created_at
        if account.managed_key is not None and account.managed_key.pk is None:
            account.managed_key = custody.managed_key_store(account.managed_key)
        account.save()
        position.pk, position.offchain_id, position.created_at = old.pk, old.offchain_id, old.created_at
    else:
        account_save(account)
    position.account = account
    try:
        with transaction.atomic():
            position.save()
    except IntegrityError:
        raise ConflictError("The owner already has this position.", field=field, code="DUPLICATE_POSITION")


def position_initialize(ctx: OperationContext, *, owner: Account | OffPlatform, instrument: FinancialInstrument, data: dict) -> PositionResult:
    """Initialize Position: the owner's associated token account for the instrument (the
    token program follows its version), or with ``associated: false`` a token account of a
    new managed key. Its rent comes from the funding account (docs/accounts.md, "Who
    pays"). Default-frozen instruments yield frozen positions. ``alreadyOnchain`` onboards
    an existing associated token account without a transaction."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    if isinstance(owner, OffPlatform):
        raise LedgerError("The owner must be an account the service knows (onboard it with Create Account).", field=f"{p}.owner", code="OFF_PLATFORM_NOT_ALLOWED")
    ensure_usable(owner, field=f"{p}.owner")
    usable_instrument(instrument, f"{p}.financialInstrument")
    check_token_debit_settings(ctx.api_key, data, owner, p)
    refs = data.get("offchainReferences") or {}
    _reference_conflicts(tenant, cluster, refs, p)
    associated, already = data.get("associated", True), data.get("alreadyOnchain", False)
    if already and not associated:
        raise LedgerError("alreadyOnchain onboards the owner's associated token account; omit associated: false.", field=f"{p}.associated", code="CONFLICTING_FIELDS")
    rpc = rpc_for(cluster)
    if not already:  # the allow-list hook would refuse every transfer to it: refused before anything is built
        ensure_owner_allowed(instrument, owner.address, field=f"{p}.owner")

    if associated:
        address = str(ix.associated_address(owner.address, instrument))
        if _existing_position(tenant, cluster, address) is not None:
            raise ConflictError("The owner already has a position in this financial instrument.", field=p, code="DUPLICATE_POSITION")
        onchain = rpc.account(Pubkey.from_string(address))
        if already:
            if onchain is None:
                raise NotFoundError("The owner has no associated token account for this instrument on the network.", field=f"{p}.owner", code="ACCOUNT_NOT_ONCHAIN")
            account, position = associated_draft(tenant=tenant, cluster=cluster, owner=owner, instrument=instrument, data=data, onchain=onchain)
            with write_phase():
                _save(account, position)
            return PositionResult(position, None)
        if onchain is not None:
            raise ConflictError("The owner's associated token account for this instrument already exists on the network; onboard it with alreadyOnchain: true.", field=p, code="POSITION_EXISTS_ONCHAIN")
        account, position = associated_draft(tenant=tenant, cluster=cluster, owner=owner, instrument=instrument, data=data, onchain=None)
        rent = associated_rent(cluster, instrument)
    else:
        key = custody.managed_key_generate(save=False)
        address = key.public_key
        account, position = _draft(tenant=tenant, cluster=cluster, owner=owner, instrument=instrument, address=address, data=data, managed_key=key, already=False)
        size = ix.account_size(instrument)
        rent = rpc.minimum_balance_for_rent_exemption(size)
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent, destination_type="MANAGED")
    target = Pubkey.from_string(address)
    if associated:
        instructions = [ix.create_associated_idempotent(payer=funding.pubkey, owner=Pubkey.from_string(owner.address), instrument=instrument)]
        signers = [funding.signer]
    else:
        program = ix.program_of(instrument)
        instructions = [
            create_account(CreateAccountParams(from_pubkey=funding.pubkey, to_pubkey=target, lamports=rent, space=size, owner=program)),
            initialize_account3(InitializeAccount3Params(program_id=program, account=target, mint=Pubkey.from_string(instrument.address), owner=Pubkey.from_string(owner.address))),
        ]
        signers = [funding.signer, SignerSpec(target, key)]
    prepared = transaction_build(context=ctx, operation=operations.INITIALIZE, instructions=instructions, signers=signers, config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        position_save_new(account, position, field=p)
        tx = transaction_record(prepared, effects_data={"position": str(position.offchain_id), **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
        position_link_creation(account, position, tx)
    return PositionResult(position, tx)


def associated_draft(*, tenant, cluster: str, owner: Account, instrument: FinancialInstrument, data: dict | None = None, onchain=None) -> tuple[Account, Position]:
    """Read phase: the unsaved records of ``owner``'s associated position in
    ``instrument`` — PENDING, to be created by a transaction, or (``onchain``: the token
    account as the network holds it) ACTIVE and onboarded with the chain's balance, state
    and delegate. Shared by Initialize Position and the operations that create a
    destination position on the way (positions/movement.py)."""
    address = str(ix.associated_address(owner.address, instrument))
    account, position = _draft(tenant=tenant, cluster=cluster, owner=owner, instrument=instrument, address=address, data=data or {}, already=onchain is not None)
    if onchain is not None:
        _onboard_state(account, position, onchain)
    return account, position


def associated_rent(cluster: str, instrument: FinancialInstrument) -> int:
    """Lamports an associated token account of ``instrument`` needs to be rent exempt."""
    return rpc_for(cluster).minimum_balance_for_rent_exemption(_associated_size(instrument))


def position_save_new(account: Account, position: Position, *, field: str = "itemData") -> None:
    """Write phase: store a drafted position (409 DUPLICATE_POSITION when a live one took
    its address since the read phase: ``_save`` checks under the row lock)."""
    _save(account, position, field=field)


def position_link_creation(account: Account, position: Position, tx: Transaction) -> None:
    """Write phase, after ``transaction_record``: the transaction that creates the token
    account, and the position's in-flight marker until it ends."""
    account.creation_transaction = account.last_transaction = tx
    account.save(update_fields=["creation_transaction", "last_transaction", "updated_at"])
    position.creation_transaction = position.last_transaction = position.pending_transaction = tx
    position.save(update_fields=["creation_transaction", "last_transaction", "pending_transaction", "updated_at"])


def _associated_size(instrument: FinancialInstrument) -> int:
    """Associated token accounts of Token-2022 mints also carry ImmutableOwner (0 bytes of
    data, one TLV header), which the ATA program adds."""
    if instrument.version != "TOKEN_2022":
        return ix.ACCOUNT_SIZE
    base = ix.account_size(instrument)
    return (base if base > ix.ACCOUNT_SIZE else ix.ACCOUNT_SIZE + 1) + 4


def _onboard_state(account: Account, position: Position, onchain) -> None:
    """An existing token account's balance, state and delegate, from its data."""
    from .onchain import decode_token_account

    state = decode_token_account(bytes(onchain.data))
    if state.mint != position.instrument.address or state.owner != position.owner_address:
        raise LedgerError("The token account on the network belongs to another mint or owner.", field="itemData", code="ACCOUNT_MISMATCH")
    account.token_balance = state.amount
    account.lamports_balance = onchain.lamports
    position.frozen = state.frozen
    position.delegate_address = state.delegate or ""
    position.delegated_amount = state.delegated_amount
