"""Writes of the transaction engine: prepare, sign, submit, confirm, apply (docs/transactions.md).

The path of every chain-changing operation: an area service resolves records and builds
instructions → ``transaction_build`` builds, simulates and signs the message outside any
database transaction → ``transaction_record`` stores the Transaction row in the service's
``write_phase()`` with its domain rows → on commit the worker's
``submit`` task sends the stored bytes → ``confirm`` follows the signature, reads what the
effects need from the chain (``effects.prefetch``, no database transaction open) and
applies the operation's offchain effects exactly once.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

from django.db import IntegrityError
from django.db import transaction as db_transaction
from django.db.models import F, Q
from django.utils import timezone
from solders.instruction import Instruction
from solders.pubkey import Pubkey
from solders.signature import Signature

from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.scoping import worker_only

from . import effects, fee_payers, landing
from .chain import builder
from .chain.errors import ChainUnavailable, SimulationFailed
from .chain.rpc import rpc_for
from .chain.signing import sign_all, signature_valid
from .models import Commitment, MessageLifetime, NonceAccount, Transaction, TransactionEvent, TransactionStatus

logger = logging.getLogger("ledger.transactions")

_COMMITMENT_RANK = {"processed": 0, "confirmed": 1, "finalized": 2}


@dataclass(frozen=True)
class SignerSpec:
    """A required signer: its address and, when the service holds its key, the key.

    ``keypair``: a throwaway in-memory key (the localnet airdrop funder, docs/accounts.md);
    never stored."""

    pubkey: Pubkey
    managed_key: object | None = None  # accounts.ManagedKey
    keypair: object | None = None  # solders Keypair

    @property
    def signs_here(self) -> bool:
        return self.managed_key is not None or self.keypair is not None


@dataclass(frozen=True)
class TxConfig:
    """svmTransactionConfig, parsed (ledger_project.api.envelope)."""

    fee_payer: SignerSpec | None = None
    compute: builder.ComputeUnits | None = None
    commitment: str = Commitment.CONFIRMED
    lifetime: str = MessageLifetime.RECENT_BLOCKHASH
    version: str = "V0"
    lookup_tables: tuple[Pubkey, ...] = ()

    @classmethod
    def from_validated(cls, data: dict | None, *, fee_payer: SignerSpec | None = None) -> "TxConfig":
        data = data or {}
        cu = data.get("computeUnitConfig") or None
        compute = None
        if cu and cu.get("enable", True):
            compute = builder.ComputeUnits(limit=cu.get("limit"), price=cu.get("price"), estimate=bool(cu.get("priceEstimate")) and cu.get("price") is None)
        return cls(
            fee_payer=fee_payer,
            compute=compute,
            commitment=((data.get("commitmentConfig") or {}).get("commitmentLevel")) or Commitment.CONFIRMED,
            lifetime=data.get("messageLifetimeStrategy") or MessageLifetime.RECENT_BLOCKHASH,
            version=data.get("transactionVersion") or "V0",
            lookup_tables=tuple(Pubkey.from_string(a) for a in data.get("addressLookupTables") or ()),
        )


def _event(tx: Transaction, kind: str, **detail) -> None:
    TransactionEvent.objects.create(transaction=tx, kind=kind, detail=detail)


def _signers_of(managed: Sequence[SignerSpec]):
    from accounts.custody import managed_key_signer

    return [s.keypair if s.keypair is not None else managed_key_signer(key=s.managed_key) for s in managed]


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

    @property
    def complete(self) -> bool:
        return all(k in self.signatures for k in self.required)

    def release(self) -> None:
        if self.nonce_row is not None:
            fee_payers.nonce_lease_release(nonce_account_id=self.nonce_row.pk)


def transaction_build(
    *,
    tenant,
    cluster: str,
    operation: str,
    instructions: Sequence[Instruction],
    signers: Sequence[SignerSpec] = (),
    config: TxConfig | None = None,
    simulate: bool = True,
) -> Prepared:
    """Network phase: lease a nonce (when asked), fetch the blockhash, estimate fees,
    simulate and sign. Writes nothing in the caller's database transaction and must run
    outside one (docs/transactions.md, "Path of a mutation"). Signers whose key the service
    holds sign now; the others leave the transaction PARTIALLY_SIGNED."""
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
        nonce_row = fee_payers.nonce_lease(cluster=cluster, tenant=tenant)
        nonce = builder.NonceLease(address=Pubkey.from_string(nonce_row.address), authority=_pubkey_of(nonce_row.authority_key))
        by_key.setdefault(str(nonce.authority), SignerSpec(nonce.authority, nonce_row.authority_key))
    from django.conf import settings

    plan = builder.BuildPlan(
        instructions=instructions, fee_payer=fee_payer.pubkey, version=config.version, compute=config.compute, nonce=nonce,
        lookup_tables=config.lookup_tables, blockhash_reuse_seconds=settings.LEDGER_BLOCKHASH_REUSE_SECONDS,
    )
    try:
        built = builder.build(plan, rpc)
        required = [str(k) for k in built.signers]
        unknown = [k for k in required if k not in by_key]
        if unknown:
            raise LedgerError(f"The transaction needs signatures the request does not account for: {', '.join(unknown)}.", code="MISSING_SIGNER")
        if simulate:
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
        message_bytes = built.to_bytes()
        managed = [by_key[k] for k in required if by_key[k].signs_here]
        signatures = sign_all(message_bytes, _signers_of(managed))
    except BaseException:
        if nonce_row is not None:
            fee_payers.nonce_lease_release(nonce_account_id=nonce_row.pk)
        raise
    return Prepared(
        tenant=tenant, cluster=cluster, operation=operation, config=config, fee_payer=fee_payer, message=message_bytes,
        blockhash=str(built.blockhash), last_valid_block_height=built.last_valid_block_height,
        required=required, signatures=signatures, nonce_row=nonce_row,
    )


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
        required_signers=prepared.required,
        signatures=prepared.signatures,
        commitment=config.commitment,
        submit_when_signed=submit,
    )


def transaction_record(
    prepared: Prepared, *, effects_data: dict | None = None, api_key=None, request_id=None, submit: bool = True,
    hold_for_approval: bool = False, hold_reason: str = "",
) -> Transaction:
    """Write phase: store the Transaction row (and bind the leased nonce) in the caller's
    ``write_phase()``, together with the domain rows it belongs to (STYLE.md rule 9);
    submission follows on commit.

    ``hold_for_approval`` (a debit limit was exceeded, positions/limits.py): the signed
    transaction is stored PENDING_APPROVAL (PARTIALLY_SIGNED while signatures are missing,
    then PENDING_APPROVAL) and nothing is submitted until ``transaction_approve``;
    ``hold_reason`` is its errorMessage meanwhile."""
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
        raise ConflictError(
            "An identical transaction (same message and signature) was just recorded by another request; retry to build a new one.",
            code="DUPLICATE_TRANSACTION",
        )
    if prepared.nonce_row is not None:
        if not NonceAccount.objects.filter(pk=prepared.nonce_row.pk, leased_by__isnull=True).update(leased_by=tx):
            raise LedgerError("The leased durable nonce account was taken by another transaction; retry.", code="NONCE_LEASE_LOST")
    _event(tx, "PREPARED", status=tx.status, signers=prepared.required, signed=sorted(prepared.signatures))
    if hold_for_approval:
        _event(tx, "HELD_FOR_APPROVAL", reason=hold_reason)
    elif complete and submit:
        _submit_on_commit(tx)
    return tx


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
    write (network phase, then a write phase of its own)."""
    from ledger_project.api.idempotency import write_phase

    prepared = transaction_build(tenant=tenant, cluster=cluster, operation=operation, instructions=instructions, signers=signers, config=config, simulate=simulate)
    with write_phase(on_abort=prepared.release):
        return transaction_record(prepared, effects_data=effects_data, api_key=api_key, request_id=request_id, submit=submit)


def _pubkey_of(managed_key) -> Pubkey:
    return Pubkey.from_string(managed_key.public_key)


def _submit_on_commit(tx: Transaction) -> None:
    from .pump import pump_kick

    cluster = tx.cluster

    def kick() -> None:
        # After commit the request has succeeded: a broker outage must not turn it into a
        # 500. The row is SIGNED; the pump watch (beat) starts a pump once the broker is back.
        try:
            pump_kick(cluster)
        except Exception:  # noqa: BLE001 - any broker/transport failure
            logger.warning("could not start the pump of %s; the watch will", cluster, exc_info=True)

    db_transaction.on_commit(kick)


def transaction_add_signatures(*, transaction: Transaction, signatures: dict[str, str], submit: bool | None = None) -> Transaction:
    """Add signatures collected off platform; submit when all are there (and wanted)."""
    with db_transaction.atomic():
        return _add_signatures(transaction, signatures, submit)


def _add_signatures(transaction: Transaction, signatures: dict[str, str], submit: bool | None) -> Transaction:
    tx = Transaction.objects.for_tenant(transaction.tenant).select_for_update().get(pk=transaction.pk)
    if tx.status != TransactionStatus.PARTIALLY_SIGNED:
        raise LedgerError(f"The transaction is {tx.status}; only PARTIALLY_SIGNED transactions take signatures.", code="INVALID_TRANSACTION_STATE")
    message = bytes(tx.message)
    for pubkey, signature in signatures.items():
        if pubkey not in tx.required_signers:
            raise LedgerError(f"{pubkey} is not a signer of this transaction.", field="itemData.offPlatformSigning", code="NOT_A_SIGNER")
        if not signature_valid(pubkey, message, signature):
            raise LedgerError(f"The signature for {pubkey} does not verify against the transaction message.", field="itemData.offPlatformSigning", code="INVALID_SIGNATURE")
    tx.signatures = {**tx.signatures, **signatures}
    tx.onchain_id = tx.signatures.get(tx.required_signers[0])
    if submit is not None:
        tx.submit_when_signed = submit
    if not tx.missing_signers:
        # Still waiting for approval (a debit limit): held, not submitted.
        tx.status = TransactionStatus.PENDING_APPROVAL if tx.approval_required else TransactionStatus.SIGNED
    tx.save(update_fields=["signatures", "onchain_id", "status", "submit_when_signed", "updated_at"])
    _event(tx, "SIGNATURES_ADDED", signers=sorted(signatures), status=tx.status)
    if tx.status == TransactionStatus.SIGNED and tx.submit_when_signed:
        _submit_on_commit(tx)
    return tx


def transaction_sign_on_platform(*, transaction: Transaction, managed: Sequence[SignerSpec], submit: bool | None = None) -> Transaction:
    signatures = sign_all(bytes(transaction.message), _signers_of(managed))
    return transaction_add_signatures(transaction=transaction, signatures=signatures, submit=submit)


def transaction_release(*, transaction: Transaction, approved: bool = False) -> Transaction:
    """Submit a SIGNED transaction that was held (submit_when_signed false) or, with
    ``approved`` (only ``transaction_approve`` passes it: the decision is recorded there),
    a PENDING_APPROVAL one."""
    statuses = [TransactionStatus.SIGNED, TransactionStatus.PENDING_APPROVAL] if approved else [TransactionStatus.SIGNED]
    updated = Transaction.objects.for_tenant(transaction.tenant).filter(pk=transaction.pk, status__in=statuses).update(
        status=TransactionStatus.SIGNED, submit_when_signed=True, approval_required=False, error_message="", updated_at=timezone.now()
    )
    if not updated:
        what = "SIGNED or PENDING_APPROVAL" if approved else "held SIGNED (PENDING_APPROVAL ones are approved)"
        raise LedgerError(f"Only {what} transactions can be submitted.", code="INVALID_TRANSACTION_STATE")
    transaction.refresh_from_db()
    _submit_on_commit(transaction)
    return transaction


# --- worker side ----------------------------------------------------------------------

# Not yet handed to the cluster by the service: they end by expiry (blockhash past its last
# valid height, durable nonce advanced or signing window over) or by transaction_cancel.
HELD = (TransactionStatus.PENDING_APPROVAL, TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.SIGNED)
_ENDABLE = (TransactionStatus.BUILT, *HELD, TransactionStatus.SUBMITTED)  # never out of CONFIRMED


@worker_only  # the pump: acts for no tenant
def transactions_submit(*, cluster: str | None = None, ids: Sequence[int] | None = None, limit: int = 256) -> list[int]:
    """Send SIGNED transactions' stored bytes, up to ``limit`` at once (``cluster``'s oldest
    first, or the given ``ids``), in JSON-RPC batches. Returns the ids this call claimed.

    The claim (SIGNED → SUBMITTED) commits before the bytes leave, so a second sender finds
    nothing to do, and a crash after the claim is healed by following: the same bytes are
    sent again (always safe) until their lifetime is over.
    """
    now = timezone.now()
    with db_transaction.atomic():
        due = Transaction.unscoped.filter(status=TransactionStatus.SIGNED, submit_when_signed=True)
        due = due.filter(pk__in=ids) if ids is not None else due.filter(cluster=cluster)
        # Row locks (PostgreSQL; SQLite runs one writer at a time): two senders never
        # claim one row, and neither waits for the other's rows.
        claimed = list(due.select_for_update(skip_locked=True).order_by("pk").values_list("pk", flat=True)[:limit])
        if not claimed:
            return []
        Transaction.unscoped.filter(pk__in=claimed).update(status=TransactionStatus.SUBMITTED, submitted_at=now, updated_at=now, submit_attempts=F("submit_attempts") + 1)
        TransactionEvent.objects.bulk_create([TransactionEvent(transaction_id=pk, kind="SUBMITTED", detail={}) for pk in claimed])
    _broadcast(list(Transaction.unscoped.filter(pk__in=claimed).order_by("pk")), first=True)
    return claimed


@worker_only  # a single send (tests, operators); the pump sends in batches
def transaction_submit(*, transaction_id: int) -> bool:
    """Send one SIGNED transaction (``transactions_submit``). Returns whether it was this
    call's to send."""
    return bool(transactions_submit(ids=[transaction_id]))


def _raw(tx: Transaction) -> bytes:
    return bytes(builder.assemble(builder.message_from_bytes(bytes(tx.message)), tx.signatures))


def _broadcast(txs: Sequence[Transaction], *, first: bool = False) -> None:
    """Send the stored bytes with preflight, in JSON-RPC batches (one cluster). Only the
    first send's preflight refusal is final (nothing else was ever sent); a rebroadcast's
    refusal proves nothing, since an earlier send may still land: the lifetime check
    decides (transactions_follow)."""
    if not txs:
        return
    try:
        answers = rpc_for(txs[0].cluster).send_raw_many([_raw(tx) for tx in txs], skip_preflight=False, preflight_commitment="processed")
    except ChainUnavailable as exc:
        # Unknown whether the node got them: following looks them up and sends them again.
        logger.warning("broadcast of %d transactions failed: %s", len(txs), exc.message)
        return
    for tx, answer in zip(txs, answers):
        if isinstance(answer, SimulationFailed):
            text = str(answer.err)
            if "AlreadyProcessed" in text or "BlockhashNotFound" in text:
                continue  # it landed, or expired / not yet visible: following decides
            if first:
                _finish(tx, TransactionStatus.FAILED, error_message=answer.message, error={"err": text, "logs": answer.logs[-20:]})
            else:
                _event(tx, "REBROADCAST_REFUSED", error_message=answer.message, err=text)
        elif isinstance(answer, Exception):
            logger.warning("broadcast refused: %s", answer, extra={"transactionId": str(tx.offchain_id)})


def _finish(tx: Transaction, status: str, *, unless_moved: Q | None = None, also=None, **fields) -> bool:
    """End a transaction that did not land (FAILED, EXPIRED, CANCELLED) — never one that
    is CONFIRMED or already ended — run the operation's failure effects once and end its
    nonce lease. ``unless_moved`` narrows the statuses it may end from (a cancel must not
    end a transaction submitted meanwhile); ``also(tx)`` runs in the database transaction
    that ends it (a rejection's audit record). Returns whether this call ended it."""
    executed = status == TransactionStatus.FAILED and fields.get("slot") is not None
    if tx.lifetime == MessageLifetime.DURABLE_NONCE and tx.nonce_account and not executed:
        # Before the nonce is leased again, the value this transaction was signed over must
        # be spent, or its bytes could still execute later (no-op when it moved on already).
        fee_payers.nonce_advance(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    with db_transaction.atomic():
        updated = Transaction.objects.for_tenant(tx.tenant).filter(unless_moved or Q(), pk=tx.pk, status__in=_ENDABLE).update(status=status, updated_at=timezone.now(), **fields)
        if not updated:
            return False
        NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None, leased_at=None)
        _event(tx, status, **{k: v for k, v in fields.items() if k in ("error_message",)})
        if also is not None:
            also(tx)
        # Undo what the operation recorded ahead (e.g. a PENDING account): once.
        if Transaction.objects.for_tenant(tx.tenant).filter(pk=tx.pk, effects_applied_at__isnull=True).update(effects_applied_at=timezone.now()):
            tx.refresh_from_db()
            effects.apply_failure(tx)
            _event(tx, "FAILURE_EFFECTS_APPLIED")
    return True


def _reached(status) -> str:
    return str(status.confirmation_status).rsplit(".", 1)[-1].lower() if status.confirmation_status is not None else "processed"


_IN_FLIGHT = (TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED)


@worker_only  # reconciliation: acts for no tenant
def transaction_confirm(*, transaction_id: int) -> bool:
    """Follow one submitted transaction (``transactions_follow``). Returns True while it
    is still in flight."""
    tx = Transaction.unscoped.filter(pk=transaction_id, status__in=_IN_FLIGHT).first()
    return tx is not None and transaction_id in transactions_follow([tx], rebroadcast_after=0)


@worker_only  # the pump: acts for no tenant
def transactions_follow(txs: Sequence[Transaction], *, rebroadcast_after: float | None = None) -> set[int]:
    """Follow submitted transactions of one cluster by signature, in batches: one
    getSignatureStatuses per 256, one JSON-RPC batch of getTransaction (and one
    getMultipleAccounts) for those whose effects are due, and one database transaction
    applying all of their effects. Returns the ids still in flight.

    Only ``confirmed`` or ``finalized`` statuses move a transaction (CONFIRMED, FINALIZED,
    FAILED) and apply effects; ``processed`` is on a block that may still be dropped, so it
    is only noted. Nothing moves a CONFIRMED transaction but finalization. One not found is
    sent again (same bytes: at most every ``rebroadcast_after`` seconds, by default
    LEDGER_PUMP_REBROADCAST_SECONDS) or, once its lifetime is provably over, EXPIRED.
    """
    txs = [tx for tx in txs if tx.status in _IN_FLIGHT]
    if not txs:
        return set()
    rpc = rpc_for(txs[0].cluster)
    statuses = rpc.signature_statuses([Signature.from_string(tx.onchain_id) for tx in txs])
    in_flight: set[int] = set()
    settled: list[tuple[Transaction, object]] = []
    missing: list[Transaction] = []
    noted: list[tuple[Transaction, object]] = []
    for tx, status in zip(txs, statuses):
        if status is None:
            if tx.status == TransactionStatus.CONFIRMED:
                # Optimistically confirmed blocks are not rolled back; a node that lost track
                # of it (restart, pruned status cache) does not make it expired. Keep following.
                logger.warning("confirmed transaction %s not found by signature; still following", tx.onchain_id)
                in_flight.add(tx.pk)
                noted.append((tx, None))
            else:
                missing.append(tx)
        elif _reached(status) == "processed":
            in_flight.add(tx.pk)
            noted.append((tx, status))
        elif status.err is not None:
            _finish(tx, TransactionStatus.FAILED, error_message=f"The transaction failed on chain: {status.err}", error={"err": str(status.err)}, slot=status.slot)
        else:
            settled.append((tx, status))
    in_flight |= _settle(settled)
    in_flight |= _follow_missing(missing, rpc, rebroadcast_after)
    _note(noted)
    return in_flight


def _applies(tx: Transaction, reached: str) -> bool:
    return _COMMITMENT_RANK[reached] >= max(_COMMITMENT_RANK["confirmed"], _COMMITMENT_RANK.get(tx.commitment, 1))


@worker_only  # the pump
def _settle(settled: list[tuple[Transaction, object]]) -> set[int]:
    """CONFIRMED / FINALIZED, with effects applied once where due, many in one database
    transaction (``_SETTLE_CHUNK``; a savepoint each: one handler's failure leaves the
    others applied and its own transaction in flight, retried on the next pass). What the
    effects need from the chain is read first, in batches, with no database transaction
    open; a chain outage there changes nothing."""
    if not settled:
        return set()
    due = [tx for tx, status in settled if tx.effects_applied_at is None and _applies(tx, _reached(status))]
    facts = effects.prefetch_many(due)
    in_flight: set[int] = set()
    for start in range(0, len(settled), _SETTLE_CHUNK):
        in_flight |= _settle_chunk(settled[start:start + _SETTLE_CHUNK], facts, timezone.now())
    return in_flight


# Confirmations applied per database transaction: one commit for many, while the row locks
# the handlers take (accounts, positions) are held only for a short chunk's worth of work.
_SETTLE_CHUNK = 25


@worker_only  # the pump
def _settle_chunk(settled: list[tuple[Transaction, object]], facts: dict, now) -> set[int]:
    """One database transaction for ``settled``: the ``on_confirmations`` hooks run once
    for all whose effects applied; if one of them raises, the chunk is rolled back and
    redone with the hooks called per transaction, each in its own savepoint."""
    locking = [(tx, facts[tx.pk]) for tx, _ in settled if tx.pk in facts]
    try:
        with db_transaction.atomic():
            effects.lock_batch(locking)
            in_flight, applied = _settle_each(settled, facts, now, batch_hooks=False)
            effects.apply_batch([(tx, facts[tx.pk]) for tx in applied])
            TransactionEvent.objects.bulk_create([TransactionEvent(transaction_id=tx.pk, kind="EFFECTS_APPLIED", detail={}) for tx in applied])
        return in_flight
    except Exception:  # noqa: BLE001 - a batch hook failed: redo one transaction at a time
        logger.exception("batch confirmation hooks failed for %d transactions; applying them one at a time", len(settled))
    with db_transaction.atomic():
        effects.lock_batch(locking)
        in_flight, applied = _settle_each(settled, facts, now, batch_hooks=True)
        TransactionEvent.objects.bulk_create([TransactionEvent(transaction_id=tx.pk, kind="EFFECTS_APPLIED", detail={}) for tx in applied])
    return in_flight


@worker_only  # the pump
def _settle_each(settled: list[tuple[Transaction, object]], facts: dict, now, *, batch_hooks: bool) -> tuple[set[int], list[Transaction]]:
    """Each transaction in a savepoint of its own: its status, and where due its effects
    (claimed by ``effects_applied_at`` in the same UPDATE). Returns the ids still in flight
    and the transactions whose effects applied."""
    in_flight: set[int] = set()
    applied: list[Transaction] = []
    for tx, status in settled:
        finalized = _reached(status) == "finalized"
        try:
            with db_transaction.atomic():
                fields = {"status": TransactionStatus.FINALIZED if finalized else TransactionStatus.CONFIRMED, "slot": status.slot, "updated_at": now,
                          "confirmations_count": status.confirmations if status.confirmations is not None else (32 if finalized else 0)}
                if tx.confirmed_at is None:
                    fields["confirmed_at"] = now
                if finalized:
                    fields["finalized_at"] = now
                moving = Transaction.unscoped.filter(pk=tx.pk, status__in=_IN_FLIGHT)
                claimed = tx.pk in facts and moving.filter(effects_applied_at__isnull=True).update(**fields, effects_applied_at=now)
                if not claimed and not moving.update(**fields):
                    continue  # ended meanwhile (another pump, a cancel): not ours to settle
                for name, value in fields.items():
                    setattr(tx, name, value)
                if claimed:
                    # Once: the claim above is the only way in, in this savepoint.
                    tx.effects_applied_at = now
                    effects.apply(tx, facts[tx.pk])
                    if batch_hooks:
                        effects.apply_batch([(tx, facts[tx.pk])])
                if finalized:
                    NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None, leased_at=None)
                    _event(tx, "FINALIZED", slot=status.slot)
        except Exception:  # noqa: BLE001 - one transaction's bug must not hold up the others
            logger.exception("could not settle transaction %s; it stays in flight", tx.pk)
            in_flight.add(tx.pk)
            continue
        if claimed:
            applied.append(tx)
        if not finalized:
            in_flight.add(tx.pk)
    return in_flight, applied


@worker_only  # the pump
def _follow_missing(missing: list[Transaction], rpc, rebroadcast_after: float | None) -> set[int]:
    """Submitted, not found by signature: EXPIRED once provably dead, else sent again
    (the same bytes) when ``rebroadcast_after`` seconds passed since the last send."""
    from django.conf import settings

    if not missing:
        return set()
    for tx in missing:
        if tx.lifetime == MessageLifetime.DURABLE_NONCE and _window_over(tx.submitted_at):
            fee_payers.nonce_advance(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    height = rpc.block_height() if any(tx.lifetime == MessageLifetime.RECENT_BLOCKHASH for tx in missing) else None
    over = [tx for tx in missing if _lifetime_over(tx, rpc, height=height)]
    # Looked up again *after* the lifetime check: one may have landed between the first
    # lookup and the check, and must not then be called expired.
    again = rpc.signature_statuses([Signature.from_string(tx.onchain_id) for tx in over]) if over else []
    dead = {tx.pk for tx, status in zip(over, again) if status is None}
    for tx in over:
        if tx.pk in dead:
            _finish(tx, TransactionStatus.EXPIRED, error_message=_EXPIRED_MESSAGE[tx.lifetime])
    alive = [tx for tx in missing if tx.pk not in dead]
    cutoff = timezone.now() - timedelta(seconds=settings.LEDGER_PUMP_REBROADCAST_SECONDS if rebroadcast_after is None else rebroadcast_after)
    resend = [tx for tx in alive if tx.updated_at is None or tx.updated_at <= cutoff]
    _broadcast(resend)
    if resend:
        Transaction.unscoped.filter(pk__in=[tx.pk for tx in resend]).update(updated_at=timezone.now())
    return {tx.pk for tx in alive}


@worker_only  # the pump
def _note(noted: list[tuple[Transaction, object]]) -> None:
    """Still in flight and looked at: the slot a ``processed`` status names; updated_at
    either way (CONFIRMED ones are looked at again LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS
    later)."""
    if not noted:
        return
    now = timezone.now()
    for tx, status in noted:
        if status is not None:
            Transaction.unscoped.filter(pk=tx.pk).update(slot=status.slot, updated_at=now)
    Transaction.unscoped.filter(pk__in=[tx.pk for tx, status in noted if status is None]).update(updated_at=now)


_EXPIRED_MESSAGE = {
    MessageLifetime.RECENT_BLOCKHASH: "The transaction's blockhash expired before it landed; nothing was executed.",
    MessageLifetime.DURABLE_NONCE: "The transaction's durable nonce was advanced before it landed; nothing was executed.",
}


def _window_over(since) -> bool:
    from django.conf import settings

    return since is not None and timezone.now() - since >= timedelta(seconds=settings.LEDGER_DURABLE_NONCE_WINDOW_SECONDS)


def _lifetime_over(tx: Transaction, rpc, *, height: int | None = None) -> bool:
    """Provably never executing: its blockhash is past its last valid block height
    (``height``: the cluster's, when the caller read it already), or its durable nonce
    moved on."""
    if tx.lifetime == MessageLifetime.DURABLE_NONCE:
        return str(builder.nonce_value(rpc, Pubkey.from_string(tx.nonce_account))) != tx.blockhash
    if tx.last_valid_block_height is None:
        return False
    return (height if height is not None else rpc.block_height()) > tx.last_valid_block_height


@worker_only  # reconciliation: acts for no tenant
def transaction_expire_held(*, transaction_id: int) -> str | None:
    """End a transaction the service never submitted (PARTIALLY_SIGNED, PENDING_APPROVAL,
    SIGNED and held) once it can provably never execute: its blockhash is past its last
    valid height, or its durable nonce moved on — which the service makes happen itself
    when LEDGER_DURABLE_NONCE_WINDOW_SECONDS have passed since it was built. Failure
    effects run and the nonce lease ends. Returns the new status, if any.

    If it landed anyway (someone holding every signature sent it), it becomes SUBMITTED
    and is followed like a submitted one — found by its signature, or, when the fee
    payer's signature is unknown (it signs off platform), by its message in the chain's
    history (``landing.find_landed``, at most LEDGER_LANDING_SCAN_PER_RUN signatures per
    run; an unfinished scan leaves it held and the next run resumes).
    """
    from django.conf import settings

    tx = Transaction.unscoped.filter(pk=transaction_id, status__in=HELD).first()
    if tx is None or (tx.status == TransactionStatus.SIGNED and tx.submit_when_signed):
        return None  # SIGNED and queued: the submit path owns it
    rpc = rpc_for(tx.cluster)
    if tx.lifetime == MessageLifetime.DURABLE_NONCE and _window_over(tx.txn_timestamp):
        fee_payers.nonce_advance(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    if not _lifetime_over(tx, rpc):
        Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now())
        return None
    if tx.onchain_id:
        landed = rpc.signature_statuses([Signature.from_string(tx.onchain_id)])[0]
        if landed is not None:
            return _landed_unsubmitted(tx, slot=landed.slot)
    else:
        scan = landing.find_landed(tx, rpc, budget=settings.LEDGER_LANDING_SCAN_PER_RUN, resume_before=_scan_cursor(tx))
        if scan.landed:
            return _landed_unsubmitted(tx, slot=scan.slot, signatures=scan.signatures)
        if not scan.done:
            _event(tx, "LANDING_SCAN", before=scan.cursor, examined=scan.examined)
            Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now())
            return None
    return TransactionStatus.EXPIRED if _finish(tx, TransactionStatus.EXPIRED, error_message=_EXPIRED_MESSAGE[tx.lifetime]) else None


def _scan_cursor(tx: Transaction) -> str | None:
    """Where the last unfinished history scan of ``tx`` stopped (its LANDING_SCAN event)."""
    last = TransactionEvent.objects.filter(transaction=tx, kind="LANDING_SCAN").order_by("-at", "-pk").first()
    return last.detail.get("before") if last is not None else None


@worker_only  # called by transaction_expire_held (reconciliation) only
def _landed_unsubmitted(tx: Transaction, *, slot: int, signatures: dict[str, str] | None = None) -> str | None:
    """A held transaction found on chain: SUBMITTED (and due for following, whatever
    submit_when_signed said), with the signatures it landed with; the confirm path moves
    it on and applies effects once."""
    now = timezone.now()
    fields = {"status": TransactionStatus.SUBMITTED, "submit_when_signed": True, "submitted_at": now, "updated_at": now}
    if signatures:
        fields.update(signatures={**tx.signatures, **signatures}, onchain_id=signatures[tx.required_signers[0]])
    if not Transaction.unscoped.filter(pk=tx.pk, status=tx.status).update(**fields):
        return None
    _event(tx, "LANDED_UNSUBMITTED", slot=slot, found_by="history" if signatures else "signature")
    return TransactionStatus.SUBMITTED


def transaction_cancel(*, transaction: Transaction, reason: str = "") -> Transaction:
    """Cancel a transaction the service has not submitted (PENDING_APPROVAL,
    PARTIALLY_SIGNED, SIGNED and held): CANCELLED, failure effects, lease ended.

    A DURABLE_NONCE transaction's nonce is advanced first, so its bytes can never execute.
    A RECENT_BLOCKHASH one is never sent by the service again; docs/transactions.md says
    what that means for signatures handed out before its blockhash expires.
    """
    not_submitted = Q(status__in=[TransactionStatus.PENDING_APPROVAL, TransactionStatus.PARTIALLY_SIGNED]) | Q(status=TransactionStatus.SIGNED, submit_when_signed=False)
    scoped = Transaction.objects.for_tenant(transaction.tenant)
    tx = scoped.filter(not_submitted, pk=transaction.pk).first()
    if tx is None:
        status = scoped.filter(pk=transaction.pk).values_list("status", flat=True).first() or "unknown"
        raise LedgerError(f"The transaction is {status}; only transactions not yet submitted (PENDING_APPROVAL, PARTIALLY_SIGNED, held SIGNED) can be cancelled.", code="INVALID_TRANSACTION_STATE")
    if not _finish(tx, TransactionStatus.CANCELLED, unless_moved=not_submitted, error_message=reason or "Cancelled before submission; nothing was executed."):
        tx.refresh_from_db()
        raise LedgerError(f"The transaction is {tx.status}; it can no longer be cancelled.", code="INVALID_TRANSACTION_STATE")
    tx.refresh_from_db()
    return tx




@worker_only  # reconciliation sweeps every tenant
def transactions_in_flight(*, stale_after: timedelta = timedelta(seconds=5)) -> list[tuple[int, str]]:
    """(id, status) of transactions a worker should look at again: SIGNED ones whose submit
    task may be lost, SUBMITTED/CONFIRMED ones not updated recently, and held ones
    (PARTIALLY_SIGNED, PENDING_APPROVAL, SIGNED not to be submitted) whose lifetime may be
    over (reported as status HELD)."""
    cutoff = timezone.now() - stale_after
    stale = Transaction.unscoped.filter(updated_at__lt=cutoff)
    rows = list(
        stale.filter(status__in=[TransactionStatus.SIGNED, TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED], submit_when_signed=True).values_list("pk", "status")[:1000]
    )
    held = stale.filter(Q(status__in=[TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.PENDING_APPROVAL]) | Q(status=TransactionStatus.SIGNED, submit_when_signed=False))
    rows.extend((pk, "HELD") for pk in held.values_list("pk", flat=True)[:1000])
    return rows
