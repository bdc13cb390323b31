"""Signing a dropped transaction again on a fresh blockhash (docs/transactions.md, "Re-signing
on expiry"; issue 36).

A SUBMITTED ``RECENT_BLOCKHASH`` transaction that no node ever landed (providers drop sends
under congestion) used to end EXPIRED although the service made every one of its signatures.
Once its blockhash is provably dead, ``resign_or_none`` signs the *same intent* again: the
stored message with a new recent blockhash (same instructions, signers, fee), through the one
signing entry point (``platform_keys.engine_sign``), and ``resign_record`` stores the new
bytes on the same row in one conditional UPDATE (status and signature as they were read), so
two workers cannot both re-sign and a crash leaves the old row or the new one, never a
signature that does not match the stored message. The pump then submits it as usual.

"Provably dead" is stricter here than for EXPIRED: the *finalized* block height is past the
blockhash's ``lastValidBlockHeight`` (no fork can still include it) and its signature is
found nowhere (``getSignatureStatuses`` with ``searchTransactionHistory``), read after the
height. Otherwise the old bytes might still land and the new ones too: paid twice.

Not re-signed (they end EXPIRED as before): durable-nonce transactions (the nonce decides
their lifetime), requests that opted out (``svmTransactionConfig.resignOnExpiry: false``),
those re-signed ``LEDGER_RESIGN_MAX`` times, and those with a signer whose key the service
does not hold or may no longer use (off platform, a throwaway key such as the localnet
airdrop funder's, an account made inactive or no longer shared: the accounts area answers
through ``register_resign_signers``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Mapping

from django.conf import settings
from django.db import transaction as db_transaction
from django.db.models import F
from django.utils import timezone
from solders.address_lookup_table_account import AddressLookupTable, AddressLookupTableAccount
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.signature import Signature

from chain import builder
from chain.errors import ChainUnavailable
from chain.fees import message_fee
from ledger_project.api.errors import LedgerError
from tenancy.scoping import worker_only

from . import notify, platform_keys
from .models import MessageLifetime, PlatformFeePayer, Transaction, TransactionEvent, TransactionStatus
from .specs import SignerSpec

logger = logging.getLogger("ledger.transactions")

#: the TransactionEvent of a re-signing: the signature, blockhash and last valid height it replaced
RESIGNED = "RESIGNED"

#: ``resign_signers(transaction=..., addresses=[...])`` → address → SignerSpec (the service may
#: still sign with it for the transaction's organization) or None (it may not). Addresses the
#: area does not answer for are signed by their ManagedKey as custody holds it.
_ResignSigners = Callable[..., Mapping[str, SignerSpec | None]]
_resign_signers: _ResignSigners | None = None


def register_resign_signers(resolver: _ResignSigners) -> None:
    """The accounts area says which of its accounts may still sign (accounts/apps.py)."""
    global _resign_signers
    _resign_signers = resolver


@dataclass(frozen=True)
class Resigned:
    """A transaction signed again, not yet stored (``resign_record`` stores it)."""

    message: bytes
    blockhash: str
    last_valid_block_height: int
    signatures: dict[str, str]

    @property
    def onchain_id(self) -> str:
        return next(iter(self.signatures.values()))


def resignable(tx: Transaction) -> bool:
    """Whether ``tx`` may be signed again at all, read from the row alone (no keys, no RPC)."""
    return (
        tx.status == TransactionStatus.SUBMITTED and tx.lifetime == MessageLifetime.RECENT_BLOCKHASH and tx.resign_on_expiry
        and tx.resign_count < settings.LEDGER_RESIGN_MAX and tx.withdrawn_at is None and tx.last_valid_block_height is not None
    )


def _signers(tx: Transaction) -> list[SignerSpec] | None:
    """A SignerSpec with a usable key for every required signer, or None when one has none."""
    from custody.models import ManagedKey  # noqa: PLC0415 - custody stands below the engine; keys are read at signing time only

    required = list(tx.required_signers)
    keys = {key.public_key: key for key in ManagedKey.objects.filter(public_key__in=required)}
    payer = PlatformFeePayer.objects.filter(cluster=tx.cluster).values_list("managed_key__public_key", flat=True).first()
    if tx.platform_paid and tx.fee_payer != payer:
        return None  # the platform's fee payer changed since: its old key signs nothing more
    answered = dict(_resign_signers(transaction=tx, addresses=[a for a in required if a != payer])) if _resign_signers is not None else {}
    specs: list[SignerSpec] = []
    for address in required:
        key = keys.get(address)
        if key is None:
            return None  # signed off platform, or by a key the service never stored
        if address == payer:
            specs.append(SignerSpec(Pubkey.from_string(address), key, platform=True))
        elif address in answered:
            spec = answered[address]
            if spec is None or not spec.signs_here:
                return None  # an account the organization may no longer sign with
            specs.append(spec)
        else:
            specs.append(SignerSpec(Pubkey.from_string(address), key))
    return specs


def _loaded(rpc, message: MessageV0) -> tuple[tuple, tuple] | None:
    """The addresses ``message`` loads from its lookup tables as they are now (the platform-key
    check reads them), or None when a table is gone."""
    lookups = list(message.address_table_lookups)
    if not lookups:
        return (), ()
    read = rpc.read_accounts([str(lookup.account_key) for lookup in lookups])
    tables = []
    for lookup in lookups:
        account = read.accounts.get(str(lookup.account_key))
        if account is None or account.owner != builder.ADDRESS_LOOKUP_TABLE_PROGRAM:
            return None
        tables.append(AddressLookupTableAccount(lookup.account_key, list(AddressLookupTable.deserialize(bytes(account.data)).addresses)))
    try:
        return builder.loaded_addresses(message, tables)
    except IndexError:
        return None


def _with_blockhash(message: Message | MessageV0, blockhash) -> Message | MessageV0:
    """The same header, keys and compiled instructions on ``blockhash``."""
    if isinstance(message, MessageV0):
        return MessageV0(message.header, list(message.account_keys), blockhash, list(message.instructions), list(message.address_table_lookups))
    header = message.header
    return Message.new_with_compiled_instructions(header.num_required_signatures, header.num_readonly_signed_accounts, header.num_readonly_unsigned_accounts,
                                                  list(message.account_keys), blockhash, list(message.instructions))


def provably_dead(tx: Transaction, rpc) -> bool:
    """The finalized block height is past the blockhash's last valid height, then (read
    after it) the signature is found nowhere: the old bytes can never land."""
    if rpc.block_height("finalized") <= tx.last_valid_block_height:
        return False
    return rpc.signature_statuses([Signature.from_string(tx.onchain_id)])[0] is None


@worker_only  # the pump: acts for no tenant
def resign_or_none(tx: Transaction, rpc) -> Resigned | None:
    """Network phase (no database transaction open): the new message and its signatures, or
    None when ``tx`` is not to be re-signed (it then ends EXPIRED). Never called before the
    caller saw its lifetime over; checks the stricter death itself."""
    if not resignable(tx):
        return None
    specs = _signers(tx)
    if specs is None:
        return None
    old = builder.message_from_bytes(bytes(tx.message))
    loaded = _loaded(rpc, old) if isinstance(old, MessageV0) else ((), ())
    if loaded is None:
        return None
    if not provably_dead(tx, rpc):
        raise _StillAlive()
    latest = rpc.latest_blockhash()
    new = _with_blockhash(old, latest.blockhash)
    if message_fee(new) != message_fee(old):  # the fee policy was decided on this very fee (transactions/fees.py)
        raise AssertionError(f"re-signing transaction {tx.pk} changed its fee")
    size = 1 + 64 * len(tx.required_signers) + len(builder.message_bytes(new))
    if size > builder.MAX_TRANSACTION_SIZE:
        return None  # cannot happen (a blockhash has a fixed size); never send what the network refuses
    raw = builder.message_bytes(new)
    try:
        signatures = platform_keys.engine_sign(raw, new, specs, loaded=loaded, api_key=tx.created_by_key)
    except LedgerError as exc:
        logger.info("transaction %s is not signed again: %s", tx.pk, exc.message)
        return None
    ordered = {address: signatures[address] for address in tx.required_signers}
    return Resigned(raw, str(latest.blockhash), latest.last_valid_block_height, ordered)


class _StillAlive(Exception):
    """The confirmed height says expired, the finalized one not yet: wait (keep following)."""


@worker_only  # the pump
def resign_record(tx: Transaction, resigned: Resigned) -> bool:
    """Write phase: one conditional UPDATE claims the row (still SUBMITTED with the signature
    read), stores the new message, blockhash and signatures (SIGNED, due for the pump), with
    the RESIGNED event and the transaction.resigned webhook events in the same database
    transaction. Returns whether this call re-signed it (a second worker's claim finds the
    row moved and changes nothing)."""
    now = timezone.now()
    old = {"onchain_id": tx.onchain_id, "blockhash": tx.blockhash, "last_valid_block_height": tx.last_valid_block_height}
    with db_transaction.atomic():
        claimed = Transaction.unscoped.filter(pk=tx.pk, status=TransactionStatus.SUBMITTED, onchain_id=tx.onchain_id).update(
            status=TransactionStatus.SIGNED, message=resigned.message, blockhash=resigned.blockhash, last_valid_block_height=resigned.last_valid_block_height,
            signatures=resigned.signatures, onchain_id=resigned.onchain_id, resign_count=F("resign_count") + 1, submitted_at=None, updated_at=now,
        )
        if not claimed:
            return False
        TransactionEvent.objects.create(transaction_id=tx.pk, kind=RESIGNED, detail={**old, "new_onchain_id": resigned.onchain_id, "count": tx.resign_count + 1})
        # A fresh instance: the caller's ``tx`` keeps what it read, should this roll back.
        fresh = Transaction.unscoped.get(pk=tx.pk)
        fresh.previous_onchain_id = old["onchain_id"]
        notify.transactions_reached([fresh], notify.RESIGNED, now=now)
    return True


@worker_only  # the pump
def resign_dead(tx: Transaction, rpc) -> str:
    """For a SUBMITTED transaction whose lifetime is over and signature not found: ``"resigned"``
    (SIGNED again with a fresh blockhash, due for the pump), ``"waiting"`` (not provably dead
    at ``finalized`` yet, or the chain did not answer: look again later) or ``"expire"`` (not
    to be re-signed: the caller ends it EXPIRED)."""
    try:
        resigned = resign_or_none(tx, rpc)
    except _StillAlive:
        return "waiting"
    except ChainUnavailable as exc:
        logger.warning("could not re-sign transaction %s now: %s", tx.pk, exc.message)
        return "waiting"
    if resigned is None:
        return "expire"
    if not resign_record(tx, resigned):
        return "waiting"  # another worker moved it first: not ours any more
    logger.info("transaction %s signed again on a fresh blockhash", tx.pk, extra={"transactionId": str(tx.offchain_id)})
    return "resigned"
