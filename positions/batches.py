"""Batch payouts (beyond the spec; docs/positions.md, "Batch payouts"): up to 1,000
Transfer Financial Instrument items in one request, each with its own result.

The house's three phases, for many items at once (positions/movement.py does one):

1. read phase — every item is resolved and checked on its own (``_transfer_leg``); an item
   that fails gets its own 4xx (``errors``, ``httpStatus``) and is never sent, the others go
   on. Debit limits are decided item by item, in request order, counting the earlier items
   of the batch in DURATION windows (``debit_decision(already=...)``): what sending the items
   one request at a time would decide. An item over a limit is held, alone in its own
   transaction, PENDING_APPROVAL; it holds nothing else back.
2. network phase — items are packed greedily into one transaction while the message fits
   the network's 1,232 bytes (measured by compiling it, with the tenant's lookup tables for
   V0): a signer's items together, and items the service signs with up to 3 other payers'
   (``MAX_SIGNERS_PER_TRANSACTION``); items signed elsewhere only with their own signer's.
   A pack the node refuses in simulation (one item short of funds...) is split where the
   node says it failed, else in halves (positions/batch_bisect.py), so the refusal lands on
   the item that causes it. Items that create their destination go alone (each drafts
   records and a rent funding of its own).
3. one write phase — the batch, its items and every transaction, with the debited owners
   and source positions locked first (pk order, the house order), every item's limits
   decided again under the locks in request order (positions/batch_limits.py), the packs
   recorded in request order, each re-checked under the locks in a savepoint of its own:
   a pack that no longer passes (a position frozen meanwhile, a limit crossed by a
   concurrent request) is not recorded; its items are built again alone by the worker
   (positions/batch_retries.py), so the one at fault fails alone.

After the commit the pump sends each transaction as it sends any other. A packed
transaction that fails on chain applies none of its instructions (a transaction is
atomic): its items are marked RETRY_DUE in the same database transaction that records the
failure (positions/batch_effects.py) and ``batch_retry`` builds each again alone, acting as
the batch's API key, so one bad item cannot sink its neighbours and the one that fails says
why. Nothing is ever sent twice: a retry builds a new message only for items whose
transaction failed on chain, under the item row's lock.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from dataclasses import dataclass, field as dc_field
from typing import Callable

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.address_lookup_table_account import AddressLookupTableAccount
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message, MessageV0, to_bytes_versioned
from solders.instruction import AccountMeta, Instruction

from accounts.locks import lock_visible_account
from accounts.lookup import OffPlatform
from accounts.services import funding_effects
from accounts.signers import transaction_config
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError, ValidationFailed, api_error
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from transactions import fee_payers
from chain.builder import MAX_TRANSACTION_SIZE
from chain.errors import ChainError
from transactions.compression import compression_tables
from transactions.models import MessageLifetime, Transaction
from transactions.services import transaction_record

from . import batch_bisect, checks, operations
from . import movement
from .batch_limits import decided, in_request_order, pack_decision
from .limits import TOKEN, Decision, debit_decision
from .locks import lock_positions
from .lookup import resolution_memo
from .models import Batch, BatchItem, BatchItemStatus, BatchKind, Position
from .services import position_link_creation, position_save_new

#: Items in one batch request at most (the serializers' max_length; the rate limit's weight
#: of a batch is capped there).
MAX_BATCH_ITEMS = 1000
#: Items in one transaction at most, whatever the size: every transfer adds writable
#: accounts, and the runtime locks at most 64 accounts per transaction.
MAX_ITEMS_PER_TRANSACTION = 24
#: Debiting authorities in one transaction at most (besides the fee payer): a payroll's
#: many payers share transactions, and a failure sends fewer neighbours to a retry.
MAX_SIGNERS_PER_TRANSACTION = 4


@dataclass
class _Item:
    index: int
    data: dict
    plan: movement._Plan | None = None
    held: bool = False
    errors: list | None = None
    http_status: int | None = None

    @property
    def field(self) -> str:
        return f"itemData.items[{self.index}]"

    @property
    def leg(self) -> movement.Leg:
        return self.plan.legs[0]

    @property
    def creates(self) -> bool:
        return any(p.draft is not None or p.create for p in self.plan.parties.values())

    def reject(self, exc: LedgerError | ChainError) -> None:
        answer = api_error(exc)
        self.errors, self.http_status = answer.as_errors(), answer.status_code


@dataclass
class _Pack:
    items: list[_Item]
    held: bool = False
    plan: movement._Plan | None = None
    prepared: object | None = None
    funding: object | None = None

    def merged_plan(self) -> movement._Plan:
        parties: dict = {}
        for item in self.items:
            parties.update(item.plan.parties)
        return movement._Plan(movement.TRANSFER, [item.leg for item in self.items], parties)


@dataclass
class _Context:
    op: OperationContext  # the request's (a retry: the batch's key and svmTransactionConfig)
    running: dict = dc_field(default_factory=lambda: defaultdict(int))
    memo: dict = dc_field(default_factory=dict)  # validated item parts (``validated_item``)

    @property
    def tenant(self):
        return self.op.tenant

    @property
    def cluster(self) -> str:
        return self.op.cluster

    @property
    def api_key(self):
        return self.op.api_key

    @property
    def svm_config(self) -> dict | None:
        return self.op.svm_config


# --- read phase ---------------------------------------------------------------------------


def _debit(ctx: _Context, leg: movement.Leg, field: str, *, owner=None, position=None, running: dict) -> Decision:
    """The item's debit decision, counting ``running`` (base units decided before it in
    this batch, by debited owner, instrument and destination type) in DURATION windows."""
    position = position or leg.source.position
    owner = owner or position.owner
    destination = leg.destination.position if leg.destination.position is not None else OffPlatform(leg.destination.owner_address)
    key = (owner.pk, leg.instrument.address)
    decision = debit_decision(
        tenant=ctx.tenant, api_key=ctx.api_key, kind=TOKEN, source=owner, position=position, amount=leg.amount, destination=destination,
        field=f"{field}.source", already=lambda target: running[(key, target)],
    )
    for entry in decision.debits:
        running[(key, entry["destinationType"])] += int(entry["amount"])
    return decision


def validated_item(item: _Item, memo: dict, serializer_class) -> dict:
    """The item's body, validated as ``serializer_class`` (the single operation's itemData);
    a 400 naming the item's own fields otherwise. Its parts (source, destination, value,
    authority) repeat across a batch's items: each distinct one is validated once
    (``memo``), and an item with a part that does not validate goes through the serializer
    whole, for the errors a single request would answer."""
    if not isinstance(item.data, dict):
        raise LedgerError("Each item is an object shaped like the single operation's itemData.", field=item.field, code="INVALID")
    fields = memo.get(serializer_class)
    if fields is None:
        fields = memo[serializer_class] = {name: (type(f), f.required) for name, f in serializer_class().fields.items()}
    out: dict | None = {}
    if {name for name, (_, required) in fields.items() if required} <= set(item.data) <= set(fields):
        for name, value in item.data.items():
            if value is None and not fields[name][1]:
                out[name] = None
                continue
            key = (serializer_class, name, json.dumps(value, sort_keys=True, default=str))
            if key not in memo:
                serializer = fields[name][0](data=value)
                memo[key] = serializer.validated_data if serializer.is_valid() else None
            if memo[key] is None:
                out = None
                break
            out[name] = memo[key]
        if out is not None:
            return out
    try:
        return validated(serializer_class, item.data)
    except ValidationFailed as exc:
        raise ValidationFailed([{**e, "field": f"{item.field}.{e['field']}" if e.get("field") else item.field} for e in exc.as_errors()]) from None


def _read(ctx: _Context, item: _Item) -> None:
    try:
        from .serializers import TransferItem

        data = validated_item(item, ctx.memo, TransferItem)
        plan = movement._Plan(movement.TRANSFER, [])
        plan.legs.append(movement._transfer_leg(plan, ctx.tenant, ctx.cluster, data, item.field))
        item.plan = plan
        item.held = _debit(ctx, item.leg, item.field, running=ctx.running).needs_approval
    except (LedgerError, ChainError) as exc:
        if api_error(exc).not_now:  # the service's trouble (a node down) or a quota, not the item's: the request fails, the client retries
            raise
        item.plan = None
        item.reject(exc)


# --- network phase: packing and building ------------------------------------------------------


def _message_size(instructions: list[Instruction], payer, tables: list, version: str) -> int:
    if version == "LEGACY":
        message = Message.new_with_blockhash(instructions, payer, Hash.default())
        raw = bytes(message)
    else:
        message = MessageV0.try_compile(payer, instructions, tables, Hash.default())
        raw = to_bytes_versioned(message)
    return 1 + 64 * message.header.num_required_signatures + len(raw)


def _pack(ctx: _Context, items: list[_Item]) -> list[_Pack]:
    """Solo packs for held items and items that create their destination; the others
    grouped by signer and packed greedily while the compiled message fits."""
    config = transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config)
    payer = (config.fee_payer or fee_payers.platform_fee_payer(ctx.cluster)).pubkey
    tables = [] if config.version == "LEGACY" else [AddressLookupTableAccount(c.address, sorted(c.addresses, key=bytes)) for c in compression_tables(ctx.tenant, ctx.cluster)]
    # What the builder adds besides the movements: compute-budget instructions, a nonce advance.
    margin = (80 if config.compute is not None else 0) + (180 if config.lifetime == MessageLifetime.DURABLE_NONCE else 0)
    reference = AccountMeta(Keypair().pubkey(), is_signer=False, is_writable=False)
    packs: list[_Pack] = []
    groups: dict[tuple, list[_Item]] = defaultdict(list)
    for item in items:
        if item.held or item.creates:
            packs.append(_Pack([item], held=item.held))
        elif item.leg.authority.signs_here:
            # Signed here: any of them may share a transaction (each extra signer costs its
            # signature and key), a signer's items kept together so they share its keys.
            groups[("here",)].append(item)
        else:
            # Signed elsewhere (PARTIALLY_SIGNED): only with that signer's other items, so one
            # outside signature completes the transaction.
            groups[("elsewhere", str(item.leg.authority.pubkey))].append(item)
    for key, group in groups.items():
        if key == ("here",):
            first_seen: dict[str, int] = {}
            for item in group:
                first_seen.setdefault(str(item.leg.authority.pubkey), len(first_seen))
            group = sorted(group, key=lambda item: first_seen[str(item.leg.authority.pubkey)])
        current: list[_Item] = []
        instructions: list[Instruction] = []
        for item in group:
            instruction = movement._movement_instruction(item.leg, ctx.cluster)
            if not instructions:
                instruction = Instruction(instruction.program_id, instruction.data, [*instruction.accounts, reference])
            candidate = [*instructions, instruction]
            signers = {str(i.leg.authority.pubkey) for i in current} | {str(item.leg.authority.pubkey)}
            fits = (len(candidate) <= MAX_ITEMS_PER_TRANSACTION and len(signers) <= MAX_SIGNERS_PER_TRANSACTION
                    and _message_size(candidate, payer, tables, config.version) + margin <= MAX_TRANSACTION_SIZE)
            if current and not fits:
                packs.append(_Pack(current))
                instruction = movement._movement_instruction(item.leg, ctx.cluster)
                current, instructions = [], [Instruction(instruction.program_id, instruction.data, [*instruction.accounts, reference])]
            else:
                instructions = candidate
            current.append(item)
        if current:
            packs.append(_Pack(current))
    return packs


def _build(ctx: _Context, pack: _Pack) -> list[_Pack]:
    """Build ``pack``; the packs built (itself, or its items split when it did not build)."""
    pack.plan = pack.merged_plan()
    try:
        pack.prepared, pack.funding = movement._build(pack.plan, ctx.op, operation=operations.TRANSFER_BATCH)  # packed or alone: effects list each item (effects.batch.items, in the order of effects.movement.legs)
        return [pack]
    except (LedgerError, ChainError) as exc:
        if api_error(exc).not_now:
            raise
        return rebuilt_after(ctx, pack, exc, _build)


def rebuilt_after(ctx: _Context, pack: _Pack, exc: LedgerError | ChainError, build: Callable) -> list[_Pack]:
    """The packs ``build`` makes of a pack refused with ``exc``: an item alone is rejected;
    several are split where the node says they failed, else in halves (batch_bisect), so
    the refusal lands on the item that causes it (a pack too large, when the estimate
    missed tables the builder did not choose, is halved)."""
    if len(pack.items) == 1:
        pack.items[0].reject(exc)
        return []
    refused, parts = batch_bisect.split(exc, pack.items, transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config))
    if refused is not None:
        refused.reject(exc)
    built: list[_Pack] = []
    try:
        for part in parts:
            if part:
                built.extend(build(ctx, _Pack(part)))
    except BaseException:
        for done in built:
            done.prepared.release()
        raise
    return built


# --- write phase --------------------------------------------------------------------------------


def _recheck(pack: _Pack, sources: dict[int, Position], destinations: dict[int, Position], instruments: dict) -> None:
    for leg in pack.plan.legs:
        checks.live_position(sources[leg.source.position.pk], f"{leg.field}.source", "send")
        receiving = leg.destination.position
        if receiving is not None and leg.destination.draft is None and receiving.pk in destinations:
            checks.live_position(destinations[receiving.pk], f"{leg.field}.destination", "receive")
        checks.movable_instrument(instruments.get(leg.instrument.pk, leg.instrument), leg.field)


class _Requeue(Exception):
    """A pack whose items must be built again alone."""


def _record_pack(ctx: _Context, batch: Batch, pack: _Pack, decision: Decision, *, sources, destinations, instruments) -> Transaction:
    _recheck(pack, sources, destinations, instruments)
    if decision.needs_approval and len(pack.items) > 1:
        raise _Requeue  # a concurrent debit moved a packed item over its limit: alone, it is held
    funded = funding_effects(pack.funding, tenant=ctx.tenant, api_key=ctx.api_key)
    drafted = [p for p in pack.plan.parties.values() if p.draft is not None]
    for party in drafted:
        position_save_new(*party.draft, field=movement._party_field(pack.plan, party))
    effects = {**movement._effects(pack.plan, funded, decision), "batch": {"offchainId": str(batch.offchain_id), "items": [item.index for item in pack.items]}}
    tx = transaction_record(pack.prepared, effects_data=effects, api_key=ctx.api_key, hold_for_approval=decision.needs_approval, hold_reason=decision.reason)
    for party in drafted:
        if party.create:
            position_link_creation(*party.draft, tx)
    return tx


def _savepoint_if_needed(pack: _Pack):
    """A savepoint for a pack whose recording writes before it may still fail (drafted
    positions, a funding, a nonce lease bound after the row): it must leave no rows. A
    plain pack's checks all come before its one write (two statements a pack saved,
    80 packs a batch); the write itself fails only on a duplicate message, which its
    reference key rules out — and then the whole request fails, and is retried, as a
    single transfer would."""
    if pack.funding is not None or pack.prepared.nonce_row is not None or any(p.draft is not None for p in pack.plan.parties.values()):
        return db_transaction.atomic()
    return contextlib.nullcontext()


def _write(ctx: _Context, batch: Batch, packs: list[_Pack]) -> dict[int, tuple[str, Transaction | None]]:
    """Record every pack (in the caller's write phase); item index → (status, transaction)."""
    outcome: dict[int, tuple[str, Transaction | None]] = {}
    if not packs:
        return outcome
    everything = movement._Plan(movement.TRANSFER, [leg for pack in packs for leg in pack.plan.legs])
    reread, fresh = movement._reread(everything, ctx.tenant)
    destinations = {p.pk: p for p in reread}
    # The house order: the debited owners and funders (accounts), then the source positions.
    owner_pks = {leg.source.position.owner_id for leg in everything.legs}
    owner_pks |= {pack.funding.funder.pk for pack in packs if pack.funding is not None and pack.funding.funder is not None}
    owners = {pk: lock_visible_account(pk, tenant=ctx.tenant) for pk in sorted(owner_pks)}
    sources = lock_positions(*{leg.source.position.pk for leg in everything.legs}, tenant=ctx.tenant)

    def decide(item: _Item, running: dict) -> Decision:
        position = sources[item.leg.source.position.pk]
        position.instrument = fresh.get(position.instrument_id, item.leg.instrument)
        owner = owners.get(position.owner_id) or item.leg.source.position.owner
        return _debit(ctx, item.leg, item.field, owner=owner, position=position, running=running)

    decisions = decided(decide, in_request_order(packs))
    for pack in packs:
        try:
            with _savepoint_if_needed(pack):
                tx = _record_pack(ctx, batch, pack, pack_decision(pack, decisions), sources=sources, destinations=destinations, instruments=fresh)
        except (LedgerError, _Requeue, IntegrityError) as exc:
            if isinstance(exc, LedgerError) and exc.not_now:
                raise
            pack.prepared.release()
            if len(pack.items) == 1 and isinstance(exc, LedgerError):
                pack.items[0].reject(exc)
                outcome[pack.items[0].index] = (BatchItemStatus.REJECTED, None)
            else:
                for item in pack.items:
                    outcome[item.index] = (BatchItemStatus.RETRY_DUE, None)
            continue
        for item in pack.items:
            outcome[item.index] = (BatchItemStatus.SENT, tx)
        Position.objects.for_tenant(ctx.tenant).filter(pk__in=[leg.source.position.pk for leg in pack.plan.legs]).update(last_transaction=tx)
    return outcome


def _destination_identifiers(item: _Item) -> dict | None:
    return item.leg.destination.identifiers if item.plan is not None else None


@dataclass(frozen=True)
class Kind:
    """What differs between the kinds of batch: each phase for one kind of item."""

    read: Callable  # (ctx, item): resolve and check; item.plan, item.held, or item.reject()
    check_all: Callable | None  # (ctx, items): checks across the items (running balances), after every read
    pack: Callable  # (ctx, items) -> packs
    build: Callable  # (ctx, pack) -> packs built
    write: Callable  # (ctx, batch, packs) -> {index: (status, tx)}, in the write phase
    result: Callable  # (item) -> the item's identifiers in the answer


def _kinds() -> dict[str, Kind]:
    from . import batch_network

    return {
        BatchKind.TRANSFER: Kind(_read, None, _pack, _build, _write, _destination_identifiers),
        BatchKind.NETWORK_CURRENCY_TRANSFER: batch_network.KIND,
    }


def _stored(value):
    """``value`` as JSON can hold it: validated lookups carry UUIDs and parsed amounts are
    Decimal; both are kept as their strings, which the API reads back the same way."""
    return None if value is None else json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def transfer_batch(op: OperationContext, *, items: list[dict], kind: str = BatchKind.TRANSFER) -> Batch:
    """A batch of ``kind`` (module docstring): every item resolved, packed, built and
    recorded; returns the Batch, whose items say what became of each."""
    ops = _kinds()[kind]
    ctx = _Context(op)
    entries = [_Item(i, data) for i, data in enumerate(items)]
    with resolution_memo():
        for item in entries:
            ops.read(ctx, item)
    if ops.check_all is not None:
        ops.check_all(ctx, [item for item in entries if item.errors is None])
    valid = [item for item in entries if item.errors is None]
    packs: list = []
    try:
        for pack in ops.pack(ctx, valid) if valid else []:
            packs.extend(ops.build(ctx, pack))
    except BaseException:
        # A refusal mid-batch (admission's CHAIN_BUSY, a budget's 503) must not keep the
        # durable-nonce leases of the packs already built until the reclaim.
        for built in packs:
            built.prepared.release()
        raise
    # Recorded in request order (the packs were made by kind: held ones, then by signer), so
    # the batch's transactions follow its items; the limits are decided in that order too.
    packs.sort(key=lambda pack: min(item.index for item in pack.items))

    def release() -> None:
        for pack in packs:
            pack.prepared.release()

    with write_phase(on_abort=release):
        batch = Batch.objects.for_tenant(op.tenant).create(
            tenant=op.tenant, cluster=op.cluster, kind=kind, request_id=op.request_id, created_by_key=op.api_key, item_count=len(entries), svm_config=_stored(op.svm_config),
        )
        outcome = ops.write(ctx, batch, packs)
        rows = []
        for item in entries:
            status, tx = outcome.get(item.index, (BatchItemStatus.REJECTED, None))
            rows.append(BatchItem(
                batch=batch, index=item.index, data=_stored(item.data), status=status, transaction=tx, first_transaction=tx,
                errors=item.errors if status == BatchItemStatus.REJECTED else None, http_status=item.http_status if status == BatchItemStatus.REJECTED else None,
                result=ops.result(item) if status != BatchItemStatus.REJECTED else None,
            ))
        BatchItem.objects.bulk_create(rows)
        if any(status == BatchItemStatus.RETRY_DUE for status, _ in outcome.values()):
            from .batch_retries import retry_on_commit

            retry_on_commit(batch)
    return batch
