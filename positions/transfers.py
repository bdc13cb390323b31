"""Transfer Network Currency (docs/positions.md): lamports from an account to another
account or an off-platform address — a System transfer signed by the source — under the
source's debit keys and limits (positions/limits.py: over a limit the transaction is held
for approval) and a rent-exemption guard.

Read and check, build and sign (network phase, no locks), then one write phase that
re-decides the debit under the source's row lock (docs/transactions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from accounts.limits import NETWORK_CURRENCY
from accounts.locks import lock_visible_account
from accounts.lookup import OffPlatform
from accounts.models import Account
from accounts.signers import ensure_usable, signer_for, transaction_config
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from chain.fees import LAMPORTS_PER_SIGNATURE, MAX_COMPUTE_UNIT_LIMIT, default_compute_unit_limit, prioritization_fee
from chain.rpc import rpc_for
from transactions.models import MessageLifetime, Transaction
from transactions.services import TxConfig, transaction_build, transaction_record

from . import operations
from .limits import debit_decision
from .values import base_units

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
#: Spec "Value" for network currency: amount in SOL (9 decimals), lamports base units.
NETWORK_CURRENCY_UNITS = SimpleNamespace(decimals=9, extensions=(), scaled_ui_multiplier=None)


@dataclass
class NetworkTransferResult:
    destination: Account | OffPlatform
    transaction: Transaction


def _fee_estimate(config: TxConfig, source: Pubkey) -> int:
    """What the source pays in fees when it is also the fee payer, at most (chain.fees): the
    signature fee (fee payer and source are one signer, plus the nonce authority for
    DURABLE_NONCE) and the priority fee of an explicit compute-unit price at the message's
    limit (its own, else the default for its instructions). A priceEstimate is unknown until
    the build: simulation then has the last word."""
    durable = config.lifetime == MessageLifetime.DURABLE_NONCE
    fee = LAMPORTS_PER_SIGNATURE * (1 + durable)
    compute = config.compute
    if compute is not None and compute.price:
        limit = min(compute.limit, MAX_COMPUTE_UNIT_LIMIT) if compute.limit else default_compute_unit_limit(1 + durable, 1)
        fee += prioritization_fee(compute.price, limit)
    return fee


def _rent_guard(rpc, *, source: Pubkey, destination: Pubkey, lamports: int, fee: int, p: str) -> None:
    """The source must stay rent exempt or end at exactly 0 lamports (the runtime refuses
    anything in between); a destination that does not exist yet must receive at least the
    rent-exempt minimum of an empty account. 400s that say what would fit."""
    source_onchain, destination_onchain = rpc.accounts([source, destination])
    balance = source_onchain.lamports if source_onchain is not None else 0
    if source_onchain is not None and (source_onchain.owner != SYSTEM_PROGRAM or len(source_onchain.data)):
        raise LedgerError(
            "Only accounts owned by the System program without data can send network currency this way "
            f"(this one is owned by {source_onchain.owner} and holds {len(source_onchain.data)} bytes of data).",
            field=f"{p}.source", code="NOT_TRANSFERABLE",
        )
    minimum = rpc.minimum_balance_for_rent_exemption(0)
    fee_text = f" and {fee} lamports of fees" if fee else ""
    if lamports + fee > balance:
        raise LedgerError(f"The source holds {balance} lamports: not enough for {lamports} lamports{fee_text}.", field=f"{p}.value", code="INSUFFICIENT_FUNDS")
    remaining = balance - lamports - fee
    if 0 < remaining < minimum:
        raise LedgerError(
            f"The source would keep {remaining} lamports, under the rent-exempt minimum of {minimum}: send at most "
            f"{balance - fee - minimum} lamports, or exactly {balance - fee} to empty it.",
            field=f"{p}.value", code="SOURCE_BELOW_RENT",
        )
    if destination_onchain is None and lamports < minimum:
        raise LedgerError(
            f"The destination does not exist on the network yet: it needs at least the rent-exempt minimum of {minimum} lamports.",
            field=f"{p}.value", code="DESTINATION_BELOW_RENT",
        )


def network_currency_transfer(ctx: OperationContext, *, source: Account, destination: Account | OffPlatform, value: dict) -> NetworkTransferResult:
    """Transfer Network Currency: a System transfer of ``value`` from ``source`` (signed
    here when its key is held and usable by the tenant, else PARTIALLY_SIGNED) to
    ``destination``. Debit keys: 403; over a debit limit: recorded PENDING_APPROVAL, nothing
    submitted until approved."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    ensure_usable(source, field=f"{p}.source")
    if isinstance(destination, Account):
        ensure_usable(destination, field=f"{p}.destination")
        destination_address = destination.address
    else:
        destination_address = destination.address
    if destination_address == source.address:
        raise LedgerError("The destination is the source itself.", field=f"{p}.destination", code="INVALID")
    lamports = base_units(value, NETWORK_CURRENCY_UNITS, field=f"{p}.value")
    decide = dict(tenant=tenant, api_key=ctx.api_key, kind=NETWORK_CURRENCY, amount=lamports, destination=destination, field=f"{p}.source")
    debit_decision(source=source, **decide)  # 403 DEBIT_NOT_ALLOWED before anything is signed

    # Another organization's account is debited only with its key usable by this one.
    signer = signer_for(source, tenant, field=f"{p}.source", require_platform=source.tenant_id != tenant.pk)
    config = transaction_config(tenant, cluster, ctx.svm_config)
    source_key, destination_key = Pubkey.from_string(source.address), Pubkey.from_string(destination_address)
    fee = _fee_estimate(config, source_key) if config.fee_payer is not None and config.fee_payer.pubkey == source_key else 0
    _rent_guard(rpc_for(cluster), source=source_key, destination=destination_key, lamports=lamports, fee=fee, p=p)

    # A reference key (read-only, not a signer; the System program ignores it) makes every
    # transfer's message unique: two equal transfers built within one blockhash would
    # otherwise be the same transaction, executed once. It also finds the transfer on chain.
    reference = Keypair().pubkey()
    plain = transfer(TransferParams(from_pubkey=source_key, to_pubkey=destination_key, lamports=lamports))
    ix = Instruction(plain.program_id, plain.data, [*plain.accounts, AccountMeta(reference, is_signer=False, is_writable=False)])
    prepared = transaction_build(context=ctx, operation=operations.TRANSFER_NETWORK_CURRENCY, instructions=[ix], signers=[signer], config=config)
    with write_phase(on_abort=prepared.release):
        # Under the source's row lock: a concurrent debit committed meanwhile is counted.
        locked = lock_visible_account(source.pk, tenant=tenant)
        ensure_usable(locked, field=f"{p}.source")
        decision = debit_decision(source=locked, lock=False, **decide)
        effects = {
            "transfer": {"kind": NETWORK_CURRENCY, "source": source.address, "destination": destination_address, "lamports": lamports, "reference": str(reference)},
            **decision.effects,
        }
        tx = transaction_record(prepared, effects_data=effects, api_key=ctx.api_key, request_id=ctx.request_id, hold_for_approval=decision.needs_approval, hold_reason=decision.reason)
    return NetworkTransferResult(destination, tx)
