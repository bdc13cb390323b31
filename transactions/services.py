"""Writes of the transaction engine: prepare, sign, submit, confirm, apply (docs/transactions.md).

The path of every chain-changing operation: an area service resolves records and builds
instructions → ``transaction_build`` builds, simulates and signs the message outside any
database transaction → ``transaction_record`` stores the Transaction row in the service's
``write_phase()`` with its domain rows → on commit the cluster's pump (transactions/pump.py)
sends the stored bytes and follows the signature (transactions/settlement.py), and the
operation's offchain effects apply exactly once. Beside it: signatures collected later
(transactions/collecting.py), ending one that did not land (transactions/ending.py), the
chain's record of one that did (transactions/chain_record.py).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Sequence

from django.conf import settings
from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.instruction import Instruction
from solders.pubkey import Pubkey

from chain import builder
from chain.errors import SimulationFailed
from chain.fees import message_fee
from chain.rpc import rpc_for
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext

from . import admission, fee_payers, fees, nonce_pool, notify, platform_keys, shards
from .compression import compression_tables
from .ending import event
from .models import MessageLifetime, NonceAccount, Transaction, TransactionSigner, TransactionStatus
from .specs import SignerSpec, TxConfig

logger = logging.getLogger("ledger.transactions")

_DUPLICATE_MESSAGE = "An identical transaction (same message and signature) was just recorded by another request; retry to build a new one."


@dataclass
class Prepared:
    """A built, simulated and signed message not yet recorded (the network phase's result).

    Holds a leased nonce account for durable-nonce transactions: ``transaction_record``
    binds it; ``release`` gives it back when the write phase does not commit."""

    tenant: object
    cluster: str
    operation: str
    config: TxConfig
    fee_payer: SignerSpec
    message: bytes
    blockhash: str
    last_valid_block_height: int | None
    required: list[str]
    signatures: dict[str, str]
    nonce_row: NonceAccount | None = None
    #: the most its fee can be (chain.fees), who pays it, and, when an organization's
    #: account pays, that debit as decided at build time (transactions/fees.py)
    max_fee: int | None = None
    platform_paid: bool = False
    fee_debit: fees.FeeDebit | None = None
    #: the API key the operation acts for (its checks ran for it)
    api_key: object | None = None

    @property
    def complete(self) -> bool:
        return all(k in self.signatures for k in self.required)

    def release(self) -> None:
        if self.nonce_row is not None:
            nonce_pool.nonce_lease_release(nonce_account_id=self.nonce_row.pk)


def transaction_build(
    *,
    context: OperationContext,
    operation: str,
    instructions: Sequence[Instruction],
    signers: Sequence[SignerSpec] = (),
    config: TxConfig | None = None,
    simulate: bool = True,
) -> Prepared:
    """Network phase: lease a nonce (when asked), fetch the blockhash, estimate fees,
    simulate and sign. Writes nothing in the caller's database transaction and must run
    outside one (docs/transactions.md, "Path of a mutation"). Signers whose key the service
    holds sign now; the others leave the transaction PARTIALLY_SIGNED.

    ``context`` (tenancy/context.py) names the tenant, the cluster and the acting API key
    the fee and signing checks run for (None outside a request: ``OperationContext.system``)."""
    tenant, cluster, api_key = context.tenant, context.cluster, context.api_key
    # Before anything is leased, fetched or built: a send path already promised for a
    # blockhash's life refuses here (503 CHAIN_BUSY, nothing stored).
    admission.admit(cluster)
    config = config or TxConfig()
    rpc = rpc_for(cluster)
    fee_payer = config.fee_payer or fee_payers.platform_fee_payer(cluster)
    by_key: dict[str, SignerSpec] = {str(fee_payer.pubkey): fee_payer}
    for spec in signers:
        if spec.signs_here and not by_key.get(str(spec.pubkey), spec).signs_here:
            by_key[str(spec.pubkey)] = spec
        by_key.setdefault(str(spec.pubkey), spec)

    nonce_row = None
    nonce = None
    if config.lifetime == MessageLifetime.DURABLE_NONCE:
        nonce_row = nonce_pool.nonce_lease(cluster=cluster, tenant=tenant, named=config.nonce_account)
        nonce = builder.NonceLease(address=Pubkey.from_string(nonce_row.address), authority=Pubkey.from_string(nonce_row.authority), written_slot=nonce_row.written_slot)
        # An authority key the service does not hold (a tenant's account with an off-platform
        # authority) leaves the transaction PARTIALLY_SIGNED until that signature arrives.
        authority = SignerSpec(nonce.authority, nonce_row.authority_key, platform=nonce_row.tenant_id is None)
        if authority.signs_here and not by_key.get(str(nonce.authority), authority).signs_here:
            by_key[str(nonce.authority)] = authority
        by_key.setdefault(str(nonce.authority), authority)
    auto_tables: tuple = ()
    if config.version == "V0" and tenant is not None and not any(ix.program_id == builder.ADDRESS_LOOKUP_TABLE_PROGRAM for ix in instructions):
        # V0 messages compress through the tenant's own lookup tables (docs/lookup-tables.md,
        # "Compression"); one that changes a table names too few accounts to gain anything.
        auto_tables = compression_tables(tenant, cluster)
    plan = builder.BuildPlan(
        instructions=instructions, fee_payer=fee_payer.pubkey, version=config.version, compute=config.compute, nonce=nonce,
        lookup_tables=config.lookup_tables, auto_lookup_tables=auto_tables, blockhash_reuse_seconds=settings.LEDGER_BLOCKHASH_REUSE_SECONDS,
        max_priority_fee=fees.platform_priority_fee_ceiling() if fee_payer.platform else None,
    )
    try:
        if nonce_row is not None and nonce_row.tenant_id is not None:
            # A tenant's account may have been initialized in the slot its creation just
            # confirmed in: its nonce is usable once the next blockhash is out (the pool's
            # fill waits the same way before offering an account).
            nonce_pool.nonce_wait_usable(rpc, nonce.address)
        built = builder.build(plan, rpc)
        required = [str(k) for k in built.signers]
        unknown = [k for k in required if k not in by_key]
        if unknown:
            raise LedgerError(f"The transaction needs signatures the request does not account for: {', '.join(unknown)}.", code="MISSING_SIGNER")
        managed = [by_key[k] for k in required if by_key[k].signs_here]
        # The platform's keys sign only in the roles given here: the fee-payer slot, and the
        # AdvanceNonceAccount the builder put first for a nonce of its own pool. Checked
        # before the simulation, so a refused message costs the node nothing.
        grants = {str(nonce.address): (0,), str(nonce.authority): (0,)} if nonce_row is not None and nonce_row.tenant_id is None else {}
        fields = {str(s.pubkey): s.field for s in signers if s.field}
        platform_keys.message_check(
            built.message, signing={str(s.pubkey): s for s in managed}, grants=grants, loaded=built.loaded, fields=fields,
            platform_signers=[str(s.pubkey) for s in managed if s.platform],
        )
        fee, fee_debit = _fee_check(tenant, cluster, config, fee_payer, built.message, api_key)
        if simulate:
            try:
                try:
                    rpc.simulate(builder.assemble(built.message, {}), tenant=tenant)
                except SimulationFailed as exc:
                    if not (built.reused_blockhash and "BlockhashNotFound" in str(exc.err)):
                        raise
                    # The node does not know the reused blockhash (another node behind the URL,
                    # a restarted local node): once more on a fresh one.
                    builder.forget_blockhash(rpc)
                    built = builder.build(dataclasses.replace(plan, blockhash_reuse_seconds=0.0), rpc)
                    rpc.simulate(builder.assemble(built.message, {}), tenant=tenant)
            except SimulationFailed as exc:
                if "AlreadyProcessed" in str(exc.err):
                    # The very same message (instructions, signers, blockhash) executed already:
                    # not a refusal of this request's operation but a copy of one recorded
                    # (an attempt of the same x-request-id replays it: tenancy/idempotency.py).
                    raise ConflictError(_DUPLICATE_MESSAGE, code="DUPLICATE_TRANSACTION") from exc
                raise
        message_bytes = built.to_bytes()
        signatures = platform_keys.engine_sign(message_bytes, built.message, managed, grants=grants, loaded=built.loaded, fields=fields, api_key=api_key)
    except BaseException:
        if nonce_row is not None:
            nonce_pool.nonce_lease_release(nonce_account_id=nonce_row.pk)
        raise
    return Prepared(
        tenant=tenant, cluster=cluster, operation=operation, config=config, fee_payer=fee_payer, message=message_bytes,
        blockhash=str(built.blockhash), last_valid_block_height=built.last_valid_block_height,
        required=required, signatures=signatures, nonce_row=nonce_row,
        max_fee=fee.total, platform_paid=fee_payer.platform, fee_debit=fee_debit, api_key=api_key,
    )


def _fee_check(tenant, cluster: str, config: TxConfig, fee_payer: SignerSpec, message, api_key):
    """Who pays the fee, and how much at most (transactions/fees.py): before the simulation,
    so a refused message costs the node nothing."""
    fee = message_fee(message)
    if fee_payer.platform:
        fees.platform_priority_check(fee, explicit_price=bool(config.compute and config.compute.price is not None))
        if tenant is not None and api_key is not None:
            fees.platform_budget_check(tenant, cluster, fee)
        return fee, None
    return fee, fees.fee_payer_debit(tenant=tenant, api_key=api_key, payer=fee_payer, lamports=fee.total)


def _create_row(prepared: Prepared, status: str, effects_data, api_key, request_id, submit: bool, hold_for_approval: bool, hold_reason: str) -> Transaction:
    config = prepared.config
    return Transaction.objects.for_tenant(prepared.tenant).create(
        tenant=prepared.tenant,
        cluster=prepared.cluster,
        operation=prepared.operation,
        effects=effects_data or {},
        created_by_key=api_key,
        request_id=request_id,
        status=status,
        approval_required=hold_for_approval,
        error_message=hold_reason if hold_for_approval else "",
        onchain_id=prepared.signatures.get(prepared.required[0]),
        message=prepared.message,
        version=config.version,
        lifetime=config.lifetime,
        blockhash=prepared.blockhash,
        last_valid_block_height=prepared.last_valid_block_height,
        nonce_account=prepared.nonce_row.address if prepared.nonce_row else "",
        fee_payer=str(prepared.fee_payer.pubkey),
        max_fee=prepared.max_fee,
        platform_paid=prepared.platform_paid,
        required_signers=prepared.required,
        signatures=prepared.signatures,
        commitment=config.commitment,
        resign_on_expiry=config.resign_on_expiry,
        submit_when_signed=submit,
        shard_key=shards.bucket_of(shards.ordering_key(nonce_account=prepared.nonce_row.address if prepared.nonce_row else "",
                                                       fee_payer=str(prepared.fee_payer.pubkey), required_signers=prepared.required)),
    )


def transaction_record(
    prepared: Prepared, *, effects_data: dict | None = None, api_key=None, request_id=None, submit: bool = True,
    hold_for_approval: bool = False, hold_reason: str = "",
) -> Transaction:
    """Write phase: store the Transaction row (and bind the leased nonce) in the caller's
    ``write_phase()``, together with the domain rows it belongs to (docs/style.md, "Intent before effect");
    submission follows on commit.

    ``hold_for_approval`` (a debit limit was exceeded, positions/limits.py): the signed
    transaction is stored PENDING_APPROVAL (PARTIALLY_SIGNED while signatures are missing,
    then PENDING_APPROVAL) and nothing is submitted until ``transaction_approve``;
    ``hold_reason`` is its errorMessage meanwhile."""
    if prepared.fee_debit is not None:
        effects_data, hold_for_approval, hold_reason = _fee_debit_record(prepared, effects_data, hold_for_approval, hold_reason)
    complete = prepared.complete
    if complete:
        status = TransactionStatus.PENDING_APPROVAL if hold_for_approval else TransactionStatus.SIGNED
    else:
        status = TransactionStatus.PARTIALLY_SIGNED
    try:
        # No savepoint of its own (two statements on every request): the 409 below ends the
        # caller's write phase, whose own savepoint or transaction rolls back.
        with db_transaction.atomic(savepoint=False):
            tx = _create_row(prepared, status, effects_data, api_key, request_id, submit, hold_for_approval, hold_reason)
    except IntegrityError:
        # Another request recorded the very same message (same instructions, signers and
        # blockhash, so the same signature) first: a second copy could never execute.
        raise ConflictError(_DUPLICATE_MESSAGE, code="DUPLICATE_TRANSACTION")
    # The signer index of Fetch Transactions (TransactionSigner): one insert for all.
    TransactionSigner.objects.bulk_create([TransactionSigner(transaction=tx, address=address, position=i) for i, address in enumerate(prepared.required)])
    if prepared.nonce_row is not None:
        if not NonceAccount.objects.filter(pk=prepared.nonce_row.pk, leased_by__isnull=True).update(leased_by=tx):
            raise LedgerError("The leased durable nonce account was taken by another transaction; retry.", code="NONCE_LEASE_LOST")
    if prepared.platform_paid and prepared.tenant is not None:
        fees.platform_fees_noted(prepared.tenant, prepared.cluster, prepared.max_fee or 0)
    event(tx, "PREPARED", status=tx.status, signers=prepared.required, signed=sorted(prepared.signatures))
    if hold_for_approval:
        event(tx, "HELD_FOR_APPROVAL", reason=hold_reason)
    elif complete and submit:
        _submit_on_commit(tx)
    return tx


def _fee_debit_record(prepared: Prepared, effects_data, hold_for_approval: bool, hold_reason: str):
    """The fee as a debit of the account that pays it, decided again under its row lock with
    the transaction's other debits of the same kind: recorded among the debits (later
    DURATION windows count it), held for approval over a limit."""
    decision = fees.fee_payer_debit(
        tenant=prepared.tenant, api_key=prepared.api_key, payer=prepared.fee_payer, lamports=prepared.max_fee or 0, lock=True,
        already=lambda entry: fees.debited_besides(effects_data, entry),
    )
    if decision is None:
        return effects_data, hold_for_approval, hold_reason
    effects_data = {**(effects_data or {}), "debits": [*((effects_data or {}).get("debits") or ()), decision.entry]}
    if decision.held:
        hold_reason = " ".join(r for r in (hold_reason if hold_for_approval else "", decision.reason) if r)
        hold_for_approval = True
    return effects_data, hold_for_approval, hold_reason


def transaction_prepare(
    *,
    tenant,
    cluster: str,
    operation: str,
    instructions: Sequence[Instruction],
    signers: Sequence[SignerSpec] = (),
    config: TxConfig | None = None,
    effects_data: dict | None = None,
    api_key=None,
    request_id=None,
    simulate: bool = True,
    submit: bool = True,
) -> Transaction:
    """Build and record in one call, for callers without domain rows of their own to
    write (network phase, then a write phase of its own). It acts for no API key
    (``OperationContext.system``); ``api_key`` is only recorded as the row's creator."""
    from tenancy.idempotency import write_phase

    prepared = transaction_build(context=OperationContext.system(tenant=tenant, cluster=cluster), operation=operation, instructions=instructions, signers=signers, config=config, simulate=simulate)
    with write_phase(on_abort=prepared.release):
        return transaction_record(prepared, effects_data=effects_data, api_key=api_key, request_id=request_id, submit=submit)


def _submit_on_commit(tx: Transaction) -> None:
    """``tx`` is now due for submission (SIGNED, to be submitted): in the database
    transaction that made it so, its transaction.pre_submit events (built and signed, before
    any node sees it: docs/webhooks.md); after the commit, the pump."""
    from .pump import pump_kick

    notify.transactions_reached([tx], notify.PRE_SUBMIT)
    cluster, shard = tx.cluster, shards.shard_of(tx.shard_key)

    def kick() -> None:
        # After commit the request has succeeded: a broker outage must not turn it into a
        # 500. The row is SIGNED; the pump watch (beat) starts a pump once the broker is back.
        try:
            pump_kick(cluster, shard)
        except Exception:  # noqa: BLE001 - any broker/transport failure
            logger.warning("could not start the pump of %s; the watch will", cluster, exc_info=True)

    db_transaction.on_commit(kick)
