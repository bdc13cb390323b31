"""Writes of address lookup tables: create, extend, freeze, deactivate, close (docs/lookup-tables.md).

Each follows the path of every chain-changing operation (docs/transactions.md, "Path of a
mutation"): read and check (the chain is read for the table's state: it is the truth),
build and sign through ``transaction_build``, then one write phase that re-checks under the
table's row lock and records the Transaction with the table's row; the pump submits and
follows it, and the effects (``effects.py``) copy the table from the chain once it
confirmed. Rent is never the platform fee payer's: it comes from
``svmTransactionConfig.feePayer`` or, on the local node, its airdrop funding
(``accounts.services.funding_signer``, docs/accounts.md "Who pays").

The endpoints resolve accounts (authorities, component addresses, funders) through the
accounts area, as the areas do: this module is the API side of a feature whose model and
compression live in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.pubkey import Pubkey

from custody import services as custody
from accounts.locks import ensure_no_operation_in_flight
from accounts.lookup import OffPlatform, resolve_account, resolve_own_account
from accounts.services import funding_effects, funding_signer
from accounts.signers import ensure_usable, signer_for, transaction_config
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase

from chain import lookup_tables as chain
from chain.errors import TransactionTooLarge
from chain.rpc import rpc_for
from transactions.locks import lock_rows
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import operations
from .models import AddressLookupTable, LookupTableState
COMPONENTS = "itemData.componentAddresses"
TABLE = "itemData.addressLookupTable"


@dataclass
class LookupTableResult:
    table: AddressLookupTable
    transaction: Transaction | None


# --- read phase helpers ----------------------------------------------------------------------


def component_addresses(tenant, cluster: str, lookups: list[dict], *, field: str = COMPONENTS) -> list[str]:
    """The addresses ``componentAddresses`` name, in order: each a lookup the accounts
    resolver answers — an account, a position's token account or an instrument's mint (both
    are account records: by onchainId, or the account's offchainId or code), another
    organization's shared account, or any address with ``offPlatform: true``. The same
    address twice → 400 DUPLICATE_ADDRESS."""
    addresses: list[str] = []
    for index, lookup in enumerate(lookups):
        found = resolve_account(tenant, cluster, lookup, field=f"{field}[{index}]", allow_off_platform=True)
        address = found.address
        if address in addresses:
            raise LedgerError(f"{address} is named twice (componentAddresses[{addresses.index(address)}] already names it).", field=f"{field}[{index}]", code="DUPLICATE_ADDRESS")
        addresses.append(address)
    return addresses


def _room(existing: int, added: int, field: str) -> None:
    if existing + added > chain.MAX_ADDRESSES:
        raise LedgerError(f"A lookup table holds at most {chain.MAX_ADDRESSES} addresses; it holds {existing} and {added} more were asked for.", field=field, code="LOOKUP_TABLE_FULL")


def _too_large(exc: TransactionTooLarge, count: int, field: str) -> LedgerError:
    """TRANSACTION_TOO_LARGE for a create or extend: how many of the addresses fit."""
    size = exc.extra.get("size")
    fit = max(0, count - -(-(size - 1232) // 32)) if size else None
    hint = f" About {fit} fit in one transaction:" if fit is not None else ""
    return LedgerError(f"{count} addresses do not fit in one transaction ({size} bytes of at most 1232).{hint} add the rest with Extend Address Lookup Table.",
                       field=field, code="TRANSACTION_TOO_LARGE")


def _authority_signer(table: AddressLookupTable, tenant) -> SignerSpec:
    """Who signs the table's changes: the key the service holds, or the tenant account
    named as authority (off platform: the transaction waits PARTIALLY_SIGNED)."""
    if table.authority_account is not None:  # the account's own rules (status, who may use its key)
        return signer_for(table.authority_account, tenant, field="itemData.addressLookupTable")
    return SignerSpec(Pubkey.from_string(table.authority), table.authority_key)


_STATE_ERRORS = {
    LookupTableState.FROZEN: ("The lookup table is frozen: it can no longer be changed.", "LOOKUP_TABLE_FROZEN"),
    LookupTableState.DEACTIVATED: ("The lookup table is deactivated: it can only be closed.", "LOOKUP_TABLE_DEACTIVATED"),
    LookupTableState.CLOSED: ("The lookup table is closed.", "LOOKUP_TABLE_CLOSED"),
    LookupTableState.FAILED: ("The lookup table was never created on chain.", "LOOKUP_TABLE_CLOSED"),
}


def _changeable(table: AddressLookupTable, *, allow: tuple[str, ...] = (LookupTableState.ACTIVE,)) -> None:
    """The record's state allows the change, and no other change of it is in flight (409)."""
    ensure_no_operation_in_flight(table, field=TABLE)
    if table.state == LookupTableState.CREATING:
        raise ConflictError("The lookup table's creation has not been confirmed yet; retry once it has.", field=TABLE, code="OPERATION_IN_PROGRESS")
    if table.state not in allow:
        if table.state == LookupTableState.ACTIVE:  # only CLOSE asks for another state
            raise LedgerError("The lookup table is not deactivated: deactivate it, wait for the cool-down, then close it.", field=TABLE, code="LOOKUP_TABLE_NOT_DEACTIVATED")
        message, code = _STATE_ERRORS[table.state]
        raise LedgerError(message, field=TABLE, code=code)


def _on_chain(table: AddressLookupTable) -> chain.TableOnChain:
    """The table as the chain holds it now (the truth; the row may be behind a change made
    outside the service): gone → 400 LOOKUP_TABLE_CLOSED."""
    found = chain.read_table(rpc_for(table.cluster), table.address)
    if found is None:
        raise LedgerError("The lookup table no longer exists on chain.", field=TABLE, code="LOOKUP_TABLE_CLOSED")
    return found


def _chain_allows(found: chain.TableOnChain, wanted: tuple[str, ...]) -> None:
    if found.status in wanted:
        return
    if found.status == "FROZEN":
        raise LedgerError("The lookup table is frozen on chain: it can no longer be changed.", field=TABLE, code="LOOKUP_TABLE_FROZEN")
    if found.status in ("DEACTIVATING", "DEACTIVATED"):
        raise LedgerError("The lookup table is deactivated on chain: it can only be closed.", field=TABLE, code="LOOKUP_TABLE_DEACTIVATED")
    raise LedgerError("The lookup table is not deactivated: deactivate it, wait for the cool-down, then close it.", field=TABLE, code="LOOKUP_TABLE_NOT_DEACTIVATED")


def _locked(table: AddressLookupTable, tenant, *, allow: tuple[str, ...]) -> AddressLookupTable:
    """Write phase: the row under its lock, re-checked (another request may have changed it)."""
    fresh = lock_rows(AddressLookupTable.objects.for_tenant(tenant).filter(pk=table.pk).select_related("pending_transaction"))[0]
    _changeable(fresh, allow=allow)
    return fresh


def _identifiers(table: AddressLookupTable) -> dict:
    return {"lookupTable": {"offchainId": str(table.offchain_id), "address": table.address}}


# --- create ------------------------------------------------------------------------------


def _free_address(rpc, *, authority: Pubkey, payer: Pubkey, taken: set[str]):
    """CreateLookupTable on a slot the SlotHashes sysvar holds, and the table's address.

    The address follows from (authority, slot). The newest finalized slot comes first (it is
    on every fork); a table this authority already has there takes an earlier slot, and when
    every slot down to 0 is taken (a chain younger than the finalization depth: the finalized
    slot is still 0), a later confirmed one.
    """
    newest = rpc.slot("finalized")
    for slot in range(newest, -1, -1):  # at most len(taken) + 1 steps
        create_ix, address = chain.create(authority=authority, payer=payer, recent_slot=slot)
        if str(address) not in taken:
            return create_ix, address
    for slot in range(newest + 1, rpc.slot("confirmed")):  # the tip is not in SlotHashes yet
        create_ix, address = chain.create(authority=authority, payer=payer, recent_slot=slot)
        if str(address) not in taken:
            return create_ix, address
    return create_ix, address  # every slot taken: the insert answers 409 DUPLICATE_LOOKUP_TABLE (retry a slot later)


def lookup_table_create(ctx: OperationContext, *, data: dict) -> LookupTableResult:
    """Create Address Lookup Table: CreateLookupTable (on a recent slot of the cluster) and,
    with componentAddresses, ExtendLookupTable in the same transaction. The authority is a
    tenant account (``authority``) or, by default, a key the service generates and holds."""
    tenant, cluster = ctx.tenant, ctx.cluster
    authority_account, key = None, None
    if data.get("authority"):
        authority_account = ensure_usable(resolve_own_account(tenant, cluster, data["authority"], field="itemData.authority"), field="itemData.authority")
        authority = Pubkey.from_string(authority_account.address)
        authority_signer = signer_for(authority_account, tenant, field="itemData.authority")
    else:
        key = custody.managed_key_generate(save=False)
        authority = Pubkey.from_string(key.public_key)
        authority_signer = SignerSpec(authority, key)
    addresses = component_addresses(tenant, cluster, data.get("componentAddresses") or [])
    _room(0, len(addresses), COMPONENTS)

    rpc = rpc_for(cluster)
    rent = rpc.minimum_balance_for_rent_exemption(chain.table_size(len(addresses)))
    managed = authority_signer.managed_key is not None
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent, destination_type="MANAGED" if managed else "NON_MANAGED")
    config = transaction_config(tenant, cluster, ctx.svm_config)
    taken = set(AddressLookupTable.objects.for_tenant(tenant).filter(cluster=cluster, authority=str(authority)).values_list("address", flat=True))
    create_ix, address = _free_address(rpc, authority=authority, payer=funding.pubkey, taken=taken)
    instructions = [create_ix]
    if addresses:
        instructions.append(chain.extend(table=address, authority=authority, payer=funding.pubkey, addresses=[Pubkey.from_string(a) for a in addresses]))
    try:
        prepared = transaction_build(context=ctx, operation=operations.CREATE, instructions=instructions, signers=[funding.signer, authority_signer], config=config)
    except TransactionTooLarge as exc:
        raise _too_large(exc, len(addresses), COMPONENTS) from None

    table = AddressLookupTable(tenant=tenant, cluster=cluster, address=str(address), state=LookupTableState.CREATING, authority=str(authority), authority_account=authority_account)
    with write_phase(on_abort=prepared.release):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        if key is not None:
            table.authority_key = custody.managed_key_store(key)
        elif authority_account.managed_key_id is not None:
            table.authority_key = authority_account.managed_key
        tx = transaction_record(prepared, effects_data={**_identifiers(table), "requestedAddresses": addresses, **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
        table.creation_transaction = table.last_transaction = table.pending_transaction = tx
        try:
            with db_transaction.atomic():  # a savepoint: the write phase stays usable for the 409
                table.save(force_insert=True)
        except IntegrityError:
            raise ConflictError("Another request is creating a lookup table at the same address; retry.", field="itemData", code="DUPLICATE_LOOKUP_TABLE") from None
    return LookupTableResult(table, tx)


# --- extend ------------------------------------------------------------------------------


def lookup_table_extend(ctx: OperationContext, *, table: AddressLookupTable, components: list[dict]) -> LookupTableResult:
    """Extend Address Lookup Table (spec, Blockchain transactions 2): the addresses are
    appended in order once the transaction confirms; the funder tops the rent up."""
    tenant, cluster = ctx.tenant, ctx.cluster
    _changeable(table)
    addresses = component_addresses(tenant, cluster, components)
    found = _on_chain(table)
    _chain_allows(found, ("ACTIVE",))
    for index, address in enumerate(addresses):
        if address in found.addresses:
            raise LedgerError(f"{address} is already in the table (index {found.addresses.index(address)}).", field=f"{COMPONENTS}[{index}]", code="DUPLICATE_ADDRESS")
    _room(len(found.addresses), len(addresses), COMPONENTS)

    rpc = rpc_for(cluster)
    top_up = max(0, rpc.minimum_balance_for_rent_exemption(chain.table_size(len(found.addresses) + len(addresses))) - found.lamports)
    authority = _authority_signer(table, tenant)
    funding = None
    if top_up:
        funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=top_up, destination_type="MANAGED" if authority.managed_key is not None else "NON_MANAGED")
    ix = chain.extend(table=Pubkey.from_string(table.address), authority=authority.pubkey, payer=funding.pubkey if funding else None, addresses=[Pubkey.from_string(a) for a in addresses])
    signers = [authority] + ([funding.signer] if funding else [])
    try:
        prepared = transaction_build(context=ctx, operation=operations.EXTEND, instructions=[ix], signers=signers, config=transaction_config(tenant, cluster, ctx.svm_config))
    except TransactionTooLarge as exc:
        raise _too_large(exc, len(addresses), COMPONENTS) from None
    with write_phase(on_abort=prepared.release):
        table = _locked(table, tenant, allow=(LookupTableState.ACTIVE,))
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        tx = transaction_record(prepared, effects_data={**_identifiers(table), "requestedAddresses": addresses, **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
        _mark(table, tx)
    return LookupTableResult(table, tx)


def _mark(table: AddressLookupTable, tx: Transaction) -> None:
    table.last_transaction = table.pending_transaction = tx
    table.save(update_fields=["last_transaction", "pending_transaction", "updated_at"])


# --- freeze, deactivate, close -------------------------------------------------------------


def lookup_table_update(ctx: OperationContext, *, table: AddressLookupTable, action: str, recipient_lookup: dict | None) -> LookupTableResult:
    """Update Address Lookup Table: FREEZE (never changes again; still used for
    compression), DEACTIVATE (no new transaction uses it; the first step of closing), CLOSE
    (once the runtime's cool-down after deactivation is over: its rent to ``recipient``)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    if recipient_lookup and action != "CLOSE":
        raise LedgerError("recipient applies to action CLOSE only.", field="itemData.recipient", code="CONFLICTING_FIELDS")
    allow = (LookupTableState.DEACTIVATED,) if action == "CLOSE" else (LookupTableState.ACTIVE,)
    _changeable(table, allow=allow)
    found = _on_chain(table)
    address, authority = Pubkey.from_string(table.address), _authority_signer(table, tenant)
    if action == "FREEZE":
        _chain_allows(found, ("ACTIVE",))
        if not found.addresses:
            raise LedgerError("An empty lookup table cannot be frozen (the runtime's rule): extend it first.", field=TABLE, code="LOOKUP_TABLE_EMPTY")
        ix, operation = chain.freeze(table=address, authority=authority.pubkey), operations.FREEZE
    elif action == "DEACTIVATE":
        _chain_allows(found, ("ACTIVE",))
        ix, operation = chain.deactivate(table=address, authority=authority.pubkey), operations.DEACTIVATE
    else:
        _chain_allows(found, ("DEACTIVATING", "DEACTIVATED"))
        if found.status != "DEACTIVATED":
            wait = f" in {found.remaining_slots} slots (about {round(found.remaining_slots * 0.4)} s)" if found.remaining_slots is not None else ""
            raise LedgerError(f"The lookup table is cooling down after its deactivation: the runtime lets it be closed{wait}, once its deactivation slot "
                              "has left the SlotHashes sysvar (512 slots).", field=TABLE, code="LOOKUP_TABLE_COOLING_DOWN")
        ix, operation = chain.close(table=address, authority=authority.pubkey, recipient=_recipient(tenant, cluster, table, recipient_lookup)), operations.CLOSE
    prepared = transaction_build(context=ctx, operation=operation, instructions=[ix], signers=[authority], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        table = _locked(table, tenant, allow=allow)
        tx = transaction_record(prepared, effects_data={**_identifiers(table), "action": action}, api_key=ctx.api_key, request_id=ctx.request_id)
        _mark(table, tx)
    return LookupTableResult(table, tx)


def _recipient(tenant, cluster: str, table: AddressLookupTable, lookup: dict | None) -> Pubkey:
    """Who receives a closed table's rent: ``recipient`` (any account, off platform too), or
    by default the tenant account that is the table's authority."""
    if lookup:
        found = resolve_account(tenant, cluster, lookup, field="itemData.recipient", allow_off_platform=True)
        if not isinstance(found, OffPlatform):
            ensure_usable(found, field="itemData.recipient")
        return Pubkey.from_string(found.address)
    if table.authority_account is not None:
        return Pubkey.from_string(table.authority_account.address)
    raise LedgerError("Name the recipient of the closed table's rent (the table's authority is a key the service holds, not an account of yours).",
                      field="itemData.recipient", code="RECIPIENT_REQUIRED")
