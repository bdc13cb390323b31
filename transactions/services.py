"""Writes of the transaction engine: prepare, sign, submit, confirm, apply (docs/transactions.md).

The path of every chain-changing operation: an area service resolves records and builds
instructions → ``transaction_prepare`` builds, simulates and signs the message and stores
the Transaction row in the caller's database transaction → on commit the worker's
``submit`` task sends the stored bytes → ``confirm`` follows the signature and applies the
operation's offchain effects exactly once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

from django.db import transaction as db_transaction
from django.db.models import F
from django.utils import timezone
from solders.instruction import Instruction
from solders.pubkey import Pubkey
from solders.signature import Signature

from ledger_project.api.errors import LedgerError

from . import effects, fee_payers
from .chain import builder
from .chain.errors import ChainUnavailable, SimulationFailed
from .chain.rpc import rpc_for
from .chain.signing import sign_all, signature_valid
from .models import Commitment, MessageLifetime, NonceAccount, Transaction, TransactionEvent, TransactionStatus

logger = logging.getLogger("ledger.transactions")

_COMMITMENT_RANK = {"processed": 0, "confirmed": 1, "finalized": 2}


@dataclass(frozen=True)
class SignerSpec:
    """A required signer: its address and, when the service holds its key, the key."""

    pubkey: Pubkey
    managed_key: object | None = None  # accounts.ManagedKey


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

    return [managed_key_signer(key=s.managed_key) for s in managed]


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
    """Build, simulate and sign a transaction and record it; submission follows on commit.

    Must run inside the caller's ``transaction.atomic()`` together with the domain rows
    it belongs to (STYLE.md rule 9). Signers whose key the service holds sign now; the
    others leave the transaction PARTIALLY_SIGNED until their signatures arrive.
    """
    config = config or TxConfig()
    rpc = rpc_for(cluster)
    fee_payer = config.fee_payer or fee_payers.platform_fee_payer(cluster)
    by_key: dict[str, SignerSpec] = {str(fee_payer.pubkey): fee_payer}
    for spec in signers:
        by_key.setdefault(str(spec.pubkey), spec)

    nonce_row = None
    nonce = None
    if config.lifetime == MessageLifetime.DURABLE_NONCE:
        nonce_row = _lease_nonce(cluster)
        nonce = builder.NonceLease(address=Pubkey.from_string(nonce_row.address), authority=_pubkey_of(nonce_row.authority_key))
        by_key.setdefault(str(nonce.authority), SignerSpec(nonce.authority, nonce_row.authority_key))

    built = builder.build(
        builder.BuildPlan(instructions=instructions, fee_payer=fee_payer.pubkey, version=config.version, compute=config.compute, nonce=nonce, lookup_tables=config.lookup_tables),
        rpc,
    )
    required = [str(k) for k in built.signers]
    unknown = [k for k in required if k not in by_key]
    if unknown:
        raise LedgerError(f"The transaction needs signatures the request does not account for: {', '.join(unknown)}.", code="MISSING_SIGNER")
    if simulate:
        rpc.simulate(builder.assemble(built.message, {}))

    message_bytes = built.to_bytes()
    managed = [by_key[k] for k in required if by_key[k].managed_key is not None]
    signatures = sign_all(message_bytes, _signers_of(managed))
    complete = all(k in signatures for k in required)
    tx = Transaction.unscoped.create(
        tenant=tenant,
        cluster=cluster,
        operation=operation,
        effects=effects_data or {},
        created_by_key=api_key,
        request_id=request_id,
        status=TransactionStatus.SIGNED if complete else TransactionStatus.PARTIALLY_SIGNED,
        onchain_id=signatures.get(required[0]),
        message=message_bytes,
        version=config.version,
        lifetime=config.lifetime,
        blockhash=str(built.blockhash),
        last_valid_block_height=built.last_valid_block_height,
        nonce_account=nonce_row.address if nonce_row else "",
        fee_payer=str(fee_payer.pubkey),
        required_signers=required,
        signatures=signatures,
        commitment=config.commitment,
        submit_when_signed=submit,
    )
    if nonce_row is not None:
        NonceAccount.objects.filter(pk=nonce_row.pk).update(leased_by=tx)
    _event(tx, "PREPARED", status=tx.status, signers=required, signed=sorted(signatures))
    if complete and submit:
        _submit_on_commit(tx)
    return tx


def _pubkey_of(managed_key) -> Pubkey:
    return Pubkey.from_string(managed_key.public_key)


def _lease_nonce(cluster: str) -> NonceAccount:
    """A free nonce account of the platform pool, locked for this transaction."""
    row = NonceAccount.objects.select_for_update(skip_locked=True).filter(cluster=cluster, leased_by__isnull=True).order_by("pk").first()
    if row is None:
        row = fee_payers.nonce_account_create(cluster)
    return row


def _submit_on_commit(tx: Transaction) -> None:
    from .tasks import submit_transaction

    tx_id = tx.pk
    db_transaction.on_commit(lambda: submit_transaction.delay(transaction_id=tx_id))


def transaction_add_signatures(*, transaction: Transaction, signatures: dict[str, str], submit: bool | None = None) -> Transaction:
    """Add signatures collected off platform; submit when all are there (and wanted)."""
    with db_transaction.atomic():
        return _add_signatures(transaction, signatures, submit)


def _add_signatures(transaction: Transaction, signatures: dict[str, str], submit: bool | None) -> Transaction:
    tx = Transaction.unscoped.select_for_update().get(pk=transaction.pk)
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
        tx.status = TransactionStatus.SIGNED
    tx.save(update_fields=["signatures", "onchain_id", "status", "submit_when_signed", "updated_at"])
    _event(tx, "SIGNATURES_ADDED", signers=sorted(signatures), status=tx.status)
    if tx.status == TransactionStatus.SIGNED and tx.submit_when_signed:
        _submit_on_commit(tx)
    return tx


def transaction_sign_on_platform(*, transaction: Transaction, managed: Sequence[SignerSpec], submit: bool | None = None) -> Transaction:
    signatures = sign_all(bytes(transaction.message), _signers_of(managed))
    return transaction_add_signatures(transaction=transaction, signatures=signatures, submit=submit)


def transaction_release(*, transaction: Transaction) -> Transaction:
    """Submit a SIGNED transaction that was held (submit_when_signed false / approval)."""
    updated = Transaction.unscoped.filter(pk=transaction.pk, status__in=[TransactionStatus.SIGNED, TransactionStatus.PENDING_APPROVAL]).update(
        status=TransactionStatus.SIGNED, submit_when_signed=True
    )
    if not updated:
        raise LedgerError("Only SIGNED or PENDING_APPROVAL transactions can be submitted.", code="INVALID_TRANSACTION_STATE")
    transaction.refresh_from_db()
    _submit_on_commit(transaction)
    return transaction


# --- worker side ----------------------------------------------------------------------


def transaction_submit(*, transaction_id: int) -> bool:
    """Send a SIGNED transaction's stored bytes. Returns whether it was this call's to send.

    The claim (SIGNED → SUBMITTED) commits before the bytes leave, so a second delivery of
    the task finds nothing to do, and a crash after the claim is healed by reconciliation,
    which rebroadcasts the same bytes (always safe) until the blockhash is dead.
    """
    claimed = Transaction.unscoped.filter(pk=transaction_id, status=TransactionStatus.SIGNED, submit_when_signed=True).update(
        status=TransactionStatus.SUBMITTED, submitted_at=timezone.now(), submit_attempts=F("submit_attempts") + 1
    )
    if not claimed:
        return False
    tx = Transaction.unscoped.get(pk=transaction_id)
    _event(tx, "SUBMITTED")
    _broadcast(tx)
    return True


def _raw(tx: Transaction) -> bytes:
    return bytes(builder.assemble(builder.message_from_bytes(bytes(tx.message)), tx.signatures))


def _broadcast(tx: Transaction) -> None:
    try:
        rpc_for(tx.cluster).send_raw(_raw(tx), skip_preflight=False, preflight_commitment="processed")
    except SimulationFailed as exc:
        text = str(exc.err)
        if "AlreadyProcessed" in text:
            return  # it landed: confirmation will see it
        if "BlockhashNotFound" in text:
            return  # expired or not yet visible: confirmation decides
        _finish(tx, TransactionStatus.FAILED, error_message=exc.message, error={"err": text, "logs": exc.logs[-20:]})
    except ChainUnavailable as exc:
        # Unknown whether the node got it: reconciliation will look it up and rebroadcast.
        logger.warning("broadcast failed: %s", exc.message, extra={"transactionId": str(tx.offchain_id)})


def _finish(tx: Transaction, status: str, **fields) -> None:
    with db_transaction.atomic():
        updated = Transaction.unscoped.filter(pk=tx.pk).exclude(status__in=[TransactionStatus.FINALIZED, TransactionStatus.FAILED, TransactionStatus.EXPIRED]).update(
            status=status, updated_at=timezone.now(), **fields
        )
        if updated:
            NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None)
            _event(tx, status, **{k: v for k, v in fields.items() if k in ("error_message",)})
            if status in (TransactionStatus.FAILED, TransactionStatus.EXPIRED):
                # Undo what the operation recorded ahead (e.g. a PENDING account): once.
                if Transaction.unscoped.filter(pk=tx.pk, effects_applied_at__isnull=True).update(effects_applied_at=timezone.now()):
                    tx.refresh_from_db()
                    effects.apply_failure(tx)
                    _event(tx, "FAILURE_EFFECTS_APPLIED")


def transaction_confirm(*, transaction_id: int) -> bool:
    """Follow a submitted transaction by signature. Returns True while still in flight."""
    tx = Transaction.unscoped.filter(pk=transaction_id).first()
    if tx is None or tx.status not in (TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED):
        return False
    rpc = rpc_for(tx.cluster)
    status = rpc.signature_statuses([Signature.from_string(tx.onchain_id)])[0]
    if status is None:
        if _is_dead(tx, rpc):
            _finish(tx, TransactionStatus.EXPIRED, error_message="The transaction's blockhash expired before it landed; nothing was executed.")
            return False
        if tx.status == TransactionStatus.SUBMITTED:
            _broadcast(tx)  # same signed bytes: safe to repeat
        Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now())
        return True
    if status.err is not None:
        _finish(tx, TransactionStatus.FAILED, error_message=f"The transaction failed on chain: {status.err}", error={"err": str(status.err)}, slot=status.slot)
        return False
    reached = str(status.confirmation_status).rsplit(".", 1)[-1].lower() if status.confirmation_status is not None else "processed"
    finalized = reached == "finalized"
    new_status = TransactionStatus.FINALIZED if finalized else TransactionStatus.CONFIRMED
    confirmations = status.confirmations if status.confirmations is not None else (32 if finalized else 0)
    now = timezone.now()
    with db_transaction.atomic():
        fields = {"status": new_status, "confirmations_count": confirmations, "slot": status.slot, "updated_at": now}
        if tx.confirmed_at is None:
            fields["confirmed_at"] = now
        if finalized:
            fields["finalized_at"] = now
        Transaction.unscoped.filter(pk=tx.pk, status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED]).update(**fields)
        if _COMMITMENT_RANK[reached] >= _COMMITMENT_RANK.get(tx.commitment, 1) or finalized:
            transaction_apply_effects(transaction_id=tx.pk)
        if finalized:
            NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None)
            _event(tx, "FINALIZED", slot=status.slot)
    return not finalized


def _is_dead(tx: Transaction, rpc) -> bool:
    """Provably never executing: blockhash past its last valid height, or nonce moved on.

    The signature is looked up again *after* the lifetime check: it may have landed between
    the first lookup and the check, and must not then be called expired.
    """
    if tx.lifetime == MessageLifetime.DURABLE_NONCE:
        if str(builder.nonce_value(rpc, Pubkey.from_string(tx.nonce_account))) == tx.blockhash:
            return False
    elif tx.last_valid_block_height is None or rpc.block_height() <= tx.last_valid_block_height:
        return False
    return rpc.signature_statuses([Signature.from_string(tx.onchain_id)])[0] is None


def transaction_apply_effects(*, transaction_id: int) -> bool:
    """Apply the operation's offchain effects once: claimed by effects_applied_at."""
    with db_transaction.atomic():
        claimed = Transaction.unscoped.filter(pk=transaction_id, effects_applied_at__isnull=True).update(effects_applied_at=timezone.now())
        if not claimed:
            return False
        tx = Transaction.unscoped.get(pk=transaction_id)
        effects.apply(tx)
        _event(tx, "EFFECTS_APPLIED")
    return True


def transactions_in_flight(*, stale_after: timedelta = timedelta(seconds=5)) -> list[tuple[int, str]]:
    """(id, status) of transactions a worker should look at again: SIGNED ones whose submit
    task may be lost, and SUBMITTED/CONFIRMED ones not updated recently."""
    cutoff = timezone.now() - stale_after
    rows = Transaction.unscoped.filter(
        status__in=[TransactionStatus.SIGNED, TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED], submit_when_signed=True, updated_at__lt=cutoff
    ).values_list("pk", "status")
    return list(rows[:1000])
