"""Batch payouts of network currency (docs/positions.md, "Batch payouts"): Transfer Network
Currency item by item, in the phases of positions/batches.py.

Each item is checked as a single Transfer Network Currency is (positions/transfers.py):
usable accounts, the source's networkCurrencyDebitApiKeys (403) and limits (held alone,
PENDING_APPROVAL), the rent guard. The rent guard runs across the batch: every source's
and destination's balance is read once (getMultipleAccounts) and each item is judged
against what the items before it leave, so two items that fit alone but not together
are refused at the second. Items of one source are packed into one transaction of
System transfers, signed by that source.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from accounts.limits import NETWORK_CURRENCY
from accounts.locks import lock_visible_account
from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account
from accounts.signers import ensure_usable, signer_for, transaction_config
from ledger_project.api.errors import LedgerError, api_error
from transactions import fee_payers
from chain.builder import MAX_TRANSACTION_SIZE
from chain.errors import ChainError
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import operations
from .batch_limits import decided, in_request_order, pack_decision
from .batches import MAX_ITEMS_PER_TRANSACTION, Kind, _Context, _Item, _message_size, _Pack, _Requeue, rebuilt_after, validated_item
from .limits import Decision, debit_decision
from .models import Batch, BatchItemStatus
from .transfers import NETWORK_CURRENCY_UNITS, SYSTEM_PROGRAM, _fee_estimate
from .values import base_units

#: The operation of every transaction a network-currency batch records (its failure
#: handler is positions/batches.py's).


@dataclass
class _Leg:
    source: Account
    destination: Account | OffPlatform
    lamports: int
    signer: SignerSpec
    field: str

    @property
    def destination_address(self) -> str:
        return self.destination.address

    def instruction(self) -> Instruction:
        return transfer(TransferParams(from_pubkey=Pubkey.from_string(self.source.address), to_pubkey=Pubkey.from_string(self.destination_address), lamports=self.lamports))


def _resolved(ctx: _Context, lookup: dict, field: str, *, off_platform: bool):
    """resolve_account, once per distinct lookup of the batch (only what resolved is kept)."""
    import json

    key = ("account", json.dumps(lookup, sort_keys=True, default=str), off_platform)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = resolve_account(ctx.tenant, ctx.cluster, lookup, field=field, allow_off_platform=off_platform)
    return found


def _decide(ctx: _Context, leg: _Leg, *, source: Account | None = None, running: dict) -> Decision:
    source = source or leg.source
    decision = debit_decision(
        tenant=ctx.tenant, api_key=ctx.api_key, kind=NETWORK_CURRENCY, source=source, amount=leg.lamports, destination=leg.destination,
        field=f"{leg.field}.source", already=lambda target: running.get((source.pk, target), 0),
    )
    for entry in decision.debits:
        running[(source.pk, entry["destinationType"])] = running.get((source.pk, entry["destinationType"]), 0) + int(entry["amount"])
    return decision


def read(ctx: _Context, item: _Item) -> None:
    from .serializers import TransferNetworkCurrencyItem

    try:
        data = validated_item(item, ctx.memo, TransferNetworkCurrencyItem)
        p = item.field
        source = _resolved(ctx, data["source"], f"{p}.source", off_platform=False)
        destination = _resolved(ctx, data["destination"], f"{p}.destination", off_platform=True)
        ensure_usable(source, field=f"{p}.source")
        if isinstance(destination, Account):
            ensure_usable(destination, field=f"{p}.destination")
        if destination.address == source.address:
            raise LedgerError("The destination is the source itself.", field=f"{p}.destination", code="INVALID")
        lamports = base_units(data["value"], NETWORK_CURRENCY_UNITS, field=f"{p}.value")
        signer = signer_for(source, ctx.tenant, field=f"{p}.source", require_platform=source.tenant_id != ctx.tenant.pk)
        leg = _Leg(source, destination, lamports, signer, p)
        item.held = _decide(ctx, leg, running=ctx.running).needs_approval
        item.plan = leg
    except (LedgerError, ChainError) as exc:
        if api_error(exc).not_now:
            raise
        item.plan = None
        item.reject(exc)


def check_all(ctx: _Context, items: list[_Item]) -> None:
    """The rent guard of positions/transfers.py across the batch, in request order: the
    balances are read once and each item is judged on what the earlier ones leave."""
    if not items:
        return
    rpc = rpc_for(ctx.cluster)
    config = transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config)
    addresses = sorted({a for item in items for a in (item.plan.source.address, item.plan.destination_address)})
    state: dict[str, object] = {}
    for start in range(0, len(addresses), 100):
        chunk = addresses[start:start + 100]
        state.update(zip(chunk, rpc.accounts([Pubkey.from_string(a) for a in chunk])))
    balances = {a: (s.lamports if s is not None else 0) for a, s in state.items()}
    minimum = rpc.minimum_balance_for_rent_exemption(0)
    for item in items:
        leg = item.plan
        p = leg.field
        source_key = Pubkey.from_string(leg.source.address)
        fee = _fee_estimate(config, source_key) if config.fee_payer is not None and config.fee_payer.pubkey == source_key else 0
        onchain = state.get(leg.source.address)
        balance = balances[leg.source.address]
        try:
            if onchain is not None and (onchain.owner != SYSTEM_PROGRAM or len(onchain.data)):
                raise LedgerError("Only accounts owned by the System program without data can send network currency this way.", field=f"{p}.source", code="NOT_TRANSFERABLE")
            if leg.lamports + fee > balance:
                raise LedgerError(f"The source holds {balance} lamports after the batch's earlier items: not enough for {leg.lamports} lamports.", field=f"{p}.value", code="INSUFFICIENT_FUNDS")
            remaining = balance - leg.lamports - fee
            if 0 < remaining < minimum:
                raise LedgerError(f"The source would keep {remaining} lamports, under the rent-exempt minimum of {minimum}.", field=f"{p}.value", code="SOURCE_BELOW_RENT")
            if balances[leg.destination_address] == 0 and leg.lamports < minimum:
                raise LedgerError(f"The destination does not exist on the network yet: it needs at least the rent-exempt minimum of {minimum} lamports.", field=f"{p}.value", code="DESTINATION_BELOW_RENT")
        except LedgerError as exc:
            item.plan = None
            item.reject(exc)
            continue
        balances[leg.source.address] = remaining
        balances[leg.destination_address] += leg.lamports


def pack(ctx: _Context, items: list[_Item]) -> list[_Pack]:
    config = transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config)
    payer = (config.fee_payer or fee_payers.platform_fee_payer(ctx.cluster)).pubkey
    reference = AccountMeta(Keypair().pubkey(), is_signer=False, is_writable=False)
    packs: list[_Pack] = []
    groups: dict[tuple, list[_Item]] = {}
    for item in items:
        if item.held:
            packs.append(_Pack([item], held=True))
        else:
            groups.setdefault((item.plan.source.address, item.plan.signer.signs_here), []).append(item)
    for group in groups.values():
        current: list[_Item] = []
        for item in group:
            candidate = [*current, item]
            instructions = _instructions(candidate, reference)
            if current and (len(candidate) > MAX_ITEMS_PER_TRANSACTION or _message_size(instructions, payer, [], "LEGACY") > MAX_TRANSACTION_SIZE - 80):
                packs.append(_Pack(current))
                current = [item]
            else:
                current = candidate
        if current:
            packs.append(_Pack(current))
    return packs


def _instructions(items: list[_Item], reference: AccountMeta) -> list[Instruction]:
    # A reference key on the first transfer (read-only, ignored by the System program) makes
    # every transaction unique, as in positions/transfers.py.
    out = [item.plan.instruction() for item in items]
    out[0] = Instruction(out[0].program_id, out[0].data, [*out[0].accounts, reference])
    return out


def build(ctx: _Context, pack_: _Pack) -> list[_Pack]:
    reference = AccountMeta(Keypair().pubkey(), is_signer=False, is_writable=False)
    pack_.plan = reference
    try:
        pack_.prepared = transaction_build(
            context=ctx.op, operation=operations.TRANSFER_NETWORK_CURRENCY_BATCH, instructions=_instructions(pack_.items, reference),
            signers=[pack_.items[0].plan.signer], config=transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config),
        )
        return [pack_]
    except (LedgerError, ChainError) as exc:
        if api_error(exc).not_now:
            raise
        return rebuilt_after(ctx, pack_, exc, build)


def _record(ctx: _Context, batch: Batch, pack_: _Pack, locked: dict[int, Account], decisions: dict) -> Transaction:
    for item in pack_.items:
        ensure_usable(locked[item.plan.source.pk], field=f"{item.field}.source")
    decision = pack_decision(pack_, decisions)
    if decision.needs_approval and len(pack_.items) > 1:
        raise _Requeue
    effects = {
        "transfers": [{"kind": NETWORK_CURRENCY, "source": i.plan.source.address, "destination": i.plan.destination_address, "lamports": i.plan.lamports} for i in pack_.items],
        "reference": str(pack_.plan.pubkey), **decision.effects,
        "batch": {"offchainId": str(batch.offchain_id), "items": [i.index for i in pack_.items]},
    }
    return transaction_record(pack_.prepared, effects_data=effects, api_key=ctx.api_key, hold_for_approval=decision.needs_approval, hold_reason=decision.reason)


def write(ctx: _Context, batch: Batch, packs: list[_Pack]) -> dict:
    outcome: dict = {}
    if not packs:
        return outcome
    # The debited sources, locked in pk order: a concurrent debit committed meanwhile is counted.
    pks = sorted({item.plan.source.pk for p in packs for item in p.items})
    locked = {pk: lock_visible_account(pk, tenant=ctx.tenant) for pk in pks}
    # Decided again under the locks, in request order (positions/batches.py ``decided``).
    decisions = decided(lambda item, running: _decide(ctx, item.plan, source=locked[item.plan.source.pk], running=running), in_request_order(packs))
    for pack_ in packs:
        try:
            # A savepoint only for a nonce lease, bound after the row (positions/batches.py).
            with db_transaction.atomic() if pack_.prepared.nonce_row is not None else contextlib.nullcontext():
                tx = _record(ctx, batch, pack_, locked, decisions)
        except (LedgerError, _Requeue, IntegrityError) as exc:
            if isinstance(exc, LedgerError) and exc.not_now:
                raise
            pack_.prepared.release()
            if len(pack_.items) == 1 and isinstance(exc, LedgerError):
                pack_.items[0].reject(exc)
                outcome[pack_.items[0].index] = (BatchItemStatus.REJECTED, None)
            else:
                for item in pack_.items:
                    outcome[item.index] = (BatchItemStatus.RETRY_DUE, None)
            continue
        for item in pack_.items:
            outcome[item.index] = (BatchItemStatus.SENT, tx)
    return outcome


def result(item: _Item) -> dict | None:
    if item.plan is None:
        return None
    destination = item.plan.destination
    return {"onchainId": destination.address, "offchainId": str(destination.offchain_id) if isinstance(destination, Account) else None}


KIND = Kind(read, check_all, pack, build, write, result)
