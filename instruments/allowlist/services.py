"""Writes of an instrument's allow-list (docs/instruments.md, "Allow-list"): Initialize,
Add and Remove Allow-List Owners. The path of every instrument update (read phase,
network phase through ``transaction_build``, one write phase re-checking under the
instrument's row lock, ``transaction_record``); the instrument's in-flight marker keeps
one operation on it at a time, so the chain read the checks rely on is current."""

from __future__ import annotations

from dataclasses import dataclass

from solders.pubkey import Pubkey

from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account
from accounts.nonces import transaction_fits
from accounts.services import funding_effects, funding_signer
from accounts.signers import ensure_usable, transaction_config
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from programs.allowlist_hook import client as hook
from transactions.models import Transaction
from transactions.services import transaction_build, transaction_record

from ..models import AUTHORITY_ROLES, FinancialInstrument, authority_column
from ..changes import _current, _in_flight_check, _locked_again, _require_extension, _usable_instrument
from ..services import Authority, _authority, _signer
from . import chain
from ..operations import ALLOW_LIST_ADD, ALLOW_LIST_INITIALIZE, ALLOW_LIST_REMOVE
from .chain import ChainAllowList

ADD, REMOVE = "ADD", "REMOVE"
ZERO = str(Pubkey.default())


@dataclass
class AllowListResult:
    instrument: FinancialInstrument
    allow_list: str  # the allow-list account's address
    transactions: list[Transaction]


def allow_list_identifiers(instrument: FinancialInstrument, address: str) -> dict:
    return {"onchainId": address, "financialInstrument": {"onchainId": instrument.address, "offchainId": str(instrument.offchain_id)}}


def hooked_instrument(instrument: FinancialInstrument, field: str) -> Pubkey:
    """The allow-list program of an open instrument whose transfer hook it is; 400 otherwise."""
    _usable_instrument(instrument, field)
    _require_extension(instrument, "TRANSFER_HOOK", field)
    program = chain.allow_list_program(instrument)
    if program is None:
        raise LedgerError(
            "The instrument's transfer hook is not the project's allow-list program (docs/programs.md); its allow-list, if any, "
            "is that program's business.", field=field, code="NOT_ALLOW_LIST_HOOK",
        )
    return program


def read_for(instrument: FinancialInstrument, field: str) -> ChainAllowList:
    program = hooked_instrument(instrument, field)
    return chain.allow_list_read(instrument.cluster, program, Pubkey.from_string(instrument.address))


def _recorded(tenant, instrument: FinancialInstrument, address: str) -> Authority:
    """An address as the record the instrument already points at for it (so a shared
    authority stays that record), else the organization's own record of it, else the
    address only (it signs off platform)."""
    for role in AUTHORITY_ROLES:
        column = authority_column(role)
        if getattr(instrument, f"{column}_address") == address and getattr(instrument, column) is not None:
            return Authority(address, getattr(instrument, column))
    return Authority(address, Account.objects.for_tenant(tenant).filter(cluster=instrument.cluster, address=address).first())


def list_authority(tenant, instrument: FinancialInstrument, address: str, given: Authority | None, field: str) -> Authority:
    """The allow-list's recorded authority (on chain), equal to ``given`` when given."""
    if given is not None:
        if given.address != address:
            raise LedgerError(f"The allow-list's authority is {address}.", field=field, code="AUTHORITY_MISMATCH")
        return given
    return _recorded(tenant, instrument, address)


def _record_all(instrument: FinancialInstrument, built: list, *, effects: list[dict], api_key, request_id) -> list[Transaction]:
    """Write phase: the Transaction rows, in order; the instrument's in-flight marker is the
    last one (they are built against one read of the list, so the next change waits)."""
    txs = [
        transaction_record(prepared, effects_data={"instrument": str(instrument.offchain_id), **extra}, api_key=api_key, request_id=request_id)
        for prepared, extra in zip(built, effects)
    ]
    FinancialInstrument.objects.for_tenant(instrument.tenant).filter(pk=instrument.pk).update(last_transaction=txs[-1], pending_transaction=txs[-1])
    instrument.last_transaction = instrument.pending_transaction = txs[-1]
    return txs


def allow_list_initialize(ctx: OperationContext, *, instrument: FinancialInstrument, data: dict) -> AllowListResult:
    """Initialize Allow-List: the hook's validation account and an empty allow-list of
    ``capacity`` owners, managed by ``authority``. The mint authority signs (the program
    asks it); the rent of both accounts comes from the funding account, never the platform
    fee payer (docs/accounts.md, "Who pays")."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    field = f"{p}.financialInstrument"
    instrument = read = FinancialInstrument.objects.for_tenant(tenant).get(pk=instrument.pk)
    listed = read_for(instrument, field)
    if listed.decoded is not None:
        raise ConflictError("The instrument's allow-list is already initialized.", field=field, code="ALLOW_LIST_EXISTS")
    _in_flight_check(instrument, field)
    mint_authority = _current(instrument, "mint", _authority(tenant, cluster, data.get("mintAuthority"), f"{p}.mintAuthority"), f"{p}.mintAuthority")
    given = _authority(tenant, cluster, data.get("authority"), f"{p}.authority")
    authority = given or _recorded(tenant, instrument, instrument.transfer_hook_authority_address or mint_authority.address)
    capacity = chain.check_capacity(data.get("capacity"), f"{p}.capacity")
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=chain.allow_list_rent(cluster, capacity), destination_type="MANAGED")
    ix = chain.initialize_instruction(program=listed.program, payer=funding.pubkey, mint=Pubkey.from_string(instrument.address), mint_authority=mint_authority.pubkey, authority=authority.pubkey, capacity=capacity)
    prepared = transaction_build(context=ctx, operation=ALLOW_LIST_INITIALIZE, instructions=[ix],
                                 signers=[funding.signer, _signer(mint_authority, tenant, f"{p}.mintAuthority")], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        locked = _locked_again(read, field)
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        effects = {"allowList": {"action": "INITIALIZE", "address": str(listed.address), "authority": authority.address, "capacity": capacity}, **funded}
        txs = _record_all(locked, [prepared], effects=[effects], api_key=ctx.api_key, request_id=ctx.request_id)
    return AllowListResult(locked, str(listed.address), txs)


def _owner_addresses(tenant, cluster: str, lookups: list[dict], *, usable: bool, p: str) -> list[str]:
    """itemData.owners → addresses (accounts of the organization, or any address with
    offPlatform: true); each at most once."""
    seen: dict[str, int] = {}
    for i, lookup in enumerate(lookups):
        field = f"{p}.owners[{i}]"
        resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
        if usable and not isinstance(resolved, OffPlatform):
            ensure_usable(resolved, field=field)
        address = resolved.address
        if address == ZERO:
            raise LedgerError("The all-zero address cannot be an owner.", field=field, code="INVALID_OWNER")
        if address in seen:
            raise LedgerError(f"The owner {address} is named twice (owners[{seen[address]}]).", field=field, code="DUPLICATE_OWNER")
        seen[address] = i
    return list(seen)


def _batches(instructions: list, fee_payer: Pubkey, config) -> list[list]:
    """As few transactions as fit (about 20 owners a transaction)."""
    batches: list[list] = []
    for ix in instructions:
        if batches and transaction_fits([*batches[-1], ix], fee_payer, config):
            batches[-1].append(ix)
        else:
            batches.append([ix])
    return batches


def allow_list_change(ctx: OperationContext, *, instrument: FinancialInstrument, action: str, data: dict) -> AllowListResult:
    """Add or Remove Allow-List Owners: one AddOwner / RemoveOwner per owner, packed into
    as few transactions as fit, each signed by the allow-list's authority (on platform when
    the service holds its key for the organization, else PARTIALLY_SIGNED for Sign
    Transaction). Checked against the list on chain before anything is built."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    field = f"{p}.financialInstrument"
    instrument = read = FinancialInstrument.objects.for_tenant(tenant).get(pk=instrument.pk)
    listed = read_for(instrument, field)
    if listed.decoded is None:
        raise LedgerError("The instrument's allow-list is not initialized (Initialize Allow-List).", field=field, code="ALLOW_LIST_NOT_INITIALIZED")
    _in_flight_check(instrument, field)
    owners = _owner_addresses(tenant, cluster, data["owners"], usable=action == ADD, p=p)
    on_list = {str(o) for o in listed.owners}
    for i, owner in enumerate(owners):
        if action == ADD and owner in on_list:
            raise LedgerError(f"The owner {owner} is already on the allow-list.", field=f"{p}.owners[{i}]", code="OWNER_ALREADY_ALLOWED")
        if action == REMOVE and owner not in on_list:
            raise LedgerError(f"The owner {owner} is not on the allow-list.", field=f"{p}.owners[{i}]", code="OWNER_NOT_LISTED")
    if action == ADD and len(on_list) + len(owners) > listed.decoded.capacity:
        raise LedgerError(
            f"The allow-list holds {len(on_list)} of {listed.decoded.capacity} owners; {len(owners)} more do not fit (the capacity is fixed "
            "when the list is created: remove owners first).", field=f"{p}.owners", code="ALLOW_LIST_FULL",
        )
    given = _authority(tenant, cluster, data.get("authority"), f"{p}.authority")
    authority = list_authority(tenant, instrument, str(listed.decoded.authority), given, f"{p}.authority")
    signer = _signer(authority, tenant, f"{p}.authority")
    encode = hook.add_owner if action == ADD else hook.remove_owner
    mint = Pubkey.from_string(instrument.address)
    config = transaction_config(tenant, cluster, ctx.svm_config)
    batches = _batches([encode(program=listed.program, mint=mint, authority=authority.pubkey, owner=Pubkey.from_string(o)) for o in owners], config.fee_payer.pubkey, config)
    operation = ALLOW_LIST_ADD if action == ADD else ALLOW_LIST_REMOVE
    built = []
    try:
        for batch in batches:
            built.append(transaction_build(context=ctx, operation=operation, instructions=batch, signers=[signer], config=config))
    except BaseException:
        for prepared in built:
            prepared.release()
        raise

    def release() -> None:
        for prepared in built:
            prepared.release()

    effects, start = [], 0
    for batch in batches:
        effects.append({"allowList": {"action": action, "address": str(listed.address), "owners": owners[start:start + len(batch)]}})
        start += len(batch)
    with write_phase(on_abort=release):
        locked = _locked_again(read, field)
        txs = _record_all(locked, built, effects=effects, api_key=ctx.api_key, request_id=ctx.request_id)
    return AllowListResult(locked, str(listed.address), txs)
