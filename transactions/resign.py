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

A SIGNED transaction waiting its turn to be sent (a send budget below the rate the API
accepts: docs/chain.md, "The fault campaign", problem 1) is signed again *before* it is sent
once its blockhash is dead or within LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS of it
(``resign_unsent``, from the pump's pass before it claims sends), by the same rules and the
same claim, so it is never sent on a dead blockhash. It was never sent, so no proof of death
is needed (``unsent``); once sent, only the SUBMITTED path above re-signs it.

Not re-signed (they end EXPIRED as before): durable-nonce transactions (the nonce decides
their lifetime), requests that opted out (``svmTransactionConfig.resignOnExpiry: false``),
those re-signed ``LEDGER_RESIGN_MAX`` times, and those with a signer whose key the service
does not hold or may no longer use (off platform, a throwaway key such as the localnet
airdrop funder's, an account made inactive or no longer shared: the accounts area answers
through ``register_resign_signers``).
"""

from __future__ import annotations

import logging
import time
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
from chain.rpc import LatestBlockhash, rpc_for
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
    """Whether ``tx`` may be signed again at all, read from the row alone (no keys, no RPC):
    SUBMITTED (its blockhash to be proven dead first), or SIGNED and never sent (``unsent``)."""
    return (
        (tx.status == TransactionStatus.SUBMITTED or unsent(tx)) and tx.lifetime == MessageLifetime.RECENT_BLOCKHASH and tx.resign_on_expiry
        and tx.resign_count < settings.LEDGER_RESIGN_MAX and tx.withdrawn_at is None and tx.last_valid_block_height is not None
    )


def unsent(tx: Transaction) -> bool:
    """SIGNED, queued, and its bytes never left the service, so they can never land and may be
    replaced at any time, before their blockhash dies, with no signature lookup:

    - no node was ever sent them: every send is claimed first by the pump's UPDATE, which
      counts it in ``submit_attempts`` and sets ``submitted_at`` and commits before the bytes
      leave (settlement.transactions_submit); a claim that crashed before sending counts too;
    - no one else can assemble them: the API hands out the message (serializedMessage) and
      the first signature (onchainId), never the others. With a single signer those two *are*
      the whole transaction, which a client could send itself: such a row is not ``unsent``
      here and keeps the SUBMITTED path's proof (finalized height, lookup by signature).
    (A holder of a key exported from custody can sign anything with it: outside what the
    service proves, as for any transaction that key signs.) A re-signed row has
    submit_attempts > 0: its new bytes wait for that path too should they expire unsent.
    """
    return (tx.status == TransactionStatus.SIGNED and tx.submit_when_signed and tx.submit_attempts == 0 and tx.submitted_at is None
            and len(tx.required_signers or ()) > 1)


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
def resign_or_none(tx: Transaction, rpc, *, latest: LatestBlockhash | None = None) -> Resigned | None:
    """Network phase (no database transaction open): the new message and its signatures, on
    ``latest`` (read now when not given), or None when ``tx`` is not to be re-signed (it then
    ends EXPIRED; an unsent one is sent as it is). A SUBMITTED one: never called before the
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
    # An unsent one's old bytes never left the service (``unsent``): no lookup, no waiting for
    # finalized: nothing can land them.
    if tx.status == TransactionStatus.SUBMITTED and not provably_dead(tx, rpc):
        raise _StillAlive()
    latest = latest or rpc.latest_blockhash()
    if str(latest.blockhash) == tx.blockhash:
        return None  # the node has made no block since (a stuck node): nothing fresher to sign on
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
    read; or still SIGNED, unsent, with the signature read: a send claimed meanwhile wins and
    the sent bytes are followed as usual), stores the new message, blockhash and signatures (SIGNED, due for the pump), with
    the RESIGNED event and the transaction.resigned webhook events in the same database
    transaction. Returns whether this call re-signed it (a second worker's claim finds the
    row moved and changes nothing)."""
    now = timezone.now()
    old = {"onchain_id": tx.onchain_id, "blockhash": tx.blockhash, "last_valid_block_height": tx.last_valid_block_height}
    was_unsent = unsent(tx)
    as_read = {"status": TransactionStatus.SIGNED, "submit_attempts": 0} if was_unsent else {"status": TransactionStatus.SUBMITTED}
    with db_transaction.atomic():
        claimed = Transaction.unscoped.filter(pk=tx.pk, onchain_id=tx.onchain_id, **as_read).update(
            status=TransactionStatus.SIGNED, message=resigned.message, blockhash=resigned.blockhash, last_valid_block_height=resigned.last_valid_block_height,
            signatures=resigned.signatures, onchain_id=resigned.onchain_id, resign_count=F("resign_count") + 1, submitted_at=None, updated_at=now,
        )
        if not claimed:
            return False
        TransactionEvent.objects.create(transaction_id=tx.pk, kind=RESIGNED, detail={**old, "new_onchain_id": resigned.onchain_id, "count": tx.resign_count + 1,
                                                                               "unsent": was_unsent})
        # A fresh instance: the caller's ``tx`` keeps what it read, should this roll back.
        fresh = Transaction.unscoped.get(pk=tx.pk)
        fresh.previous_onchain_id = old["onchain_id"]
        notify.transactions_reached([fresh], notify.RESIGNED, now=now)
    return True


@worker_only  # the pump
def resign_dead(tx: Transaction, rpc, *, latest: LatestBlockhash | None = None) -> str:
    """For a SUBMITTED transaction whose lifetime is over and signature not found, or an
    unsent one near its end: ``"resigned"`` (SIGNED again with a fresh blockhash, due for the
    pump), ``"waiting"`` (not provably dead at ``finalized`` yet, or the chain did not answer:
    look again later) or ``"expire"`` (not to be re-signed: the caller ends a SUBMITTED one
    EXPIRED; an unsent one is sent as it is)."""
    try:
        resigned = resign_or_none(tx, rpc, latest=latest)
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


# --- unsent rows near their end: signed again before the pump sends them ---------------------

# Rows re-signed per check at most: each is a few queries and one signing; the rest are next.
_UNSENT_BATCH = 100
# How often a pump looks (per process and shard set): one getBlockHeight when unsent rows wait. A
# row loses at most this much of LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS between looks (20 blocks: ~8 s).
_UNSENT_CHECK_SECONDS = 1.0
# (cluster, buckets) → when this process may look again (``resign_unsent``).
_next_check: dict[tuple, float] = {}


def _unsent_rows(cluster: str, buckets):
    """Queued SIGNED rows never sent that could be re-signed, read off the partial index
    ``txn_signed_unsent_lvbh`` (the rest of ``unsent`` and the keys are checked per row)."""
    rows = Transaction.unscoped.filter(
        cluster=cluster, status=TransactionStatus.SIGNED, submit_attempts=0, submit_when_signed=True, submitted_at__isnull=True,
        lifetime=MessageLifetime.RECENT_BLOCKHASH, resign_on_expiry=True, resign_count__lt=settings.LEDGER_RESIGN_MAX, withdrawn_at__isnull=True,
        last_valid_block_height__isnull=False,
    )
    return rows if buckets is None else rows.filter(shard_key__in=buckets)


@worker_only  # the pump: acts for no tenant
def resign_unsent(*, cluster: str, buckets=None) -> int:
    """Before the pump claims sends: sign again, on one fresh blockhash, the unsent rows (of
    ``buckets``) whose lastValidBlockHeight is within LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS of the
    cluster's height — sent now, they would die in flight or be refused (BlockhashNotFound),
    costing a send of the budget each and a second one after the SUBMITTED path re-signed
    them. Each keeps its row, so its place in the pump's oldest-first claim. Returns how many
    were re-signed.

    Cheap per pass: nothing but a clock read until ``_UNSENT_CHECK_SECONDS`` passed
    since the last look (a row loses at most that much of the margin in between), then one
    indexed EXISTS, and a getBlockHeight only when there is an unsent row at all; a
    getLatestBlockhash only when some row is near its end."""
    key = (cluster, tuple(buckets) if buckets is not None else None)
    now = time.monotonic()
    if now < _next_check.get(key, 0.0):
        return 0
    _next_check[key] = now + _UNSENT_CHECK_SECONDS
    rows = _unsent_rows(cluster, buckets)
    if not rows.order_by("last_valid_block_height").exists():
        return 0
    rpc = rpc_for(cluster)
    try:
        horizon = rpc.block_height() + settings.LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS
        near = [tx for tx in rows.filter(last_valid_block_height__lte=horizon).order_by("pk")[:_UNSENT_BATCH] if unsent(tx)]
        latest = rpc.latest_blockhash() if near else None
    except ChainUnavailable as exc:
        logger.warning("could not look for unsent transactions near their end on %s: %s", cluster, exc.message)
        return 0
    if latest is not None and latest.last_valid_block_height <= horizon:
        # A margin as long as a blockhash lives would re-sign every row at every look.
        logger.warning("LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS (%d) is not shorter than a blockhash's life on %s: not re-signing unsent transactions",
                       settings.LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS, cluster)
        return 0
    # ``"expire"`` here leaves the row alone: it is sent as it is, and ends as before.
    return sum(resign_dead(tx, rpc, latest=latest) == "resigned" for tx in near)
