"""The nonce pool (docs/transactions.md, "Durable nonces"): durable nonce accounts the
platform keeps, paid and signed for by the platform fee payer (transactions/fee_payers.py).

Requests only lease (``nonce_lease``); accounts are created ahead of demand by the pool task
(``nonce_pool_fill``), which records each account's keys before it sends the creation,
and free accounts beyond what the pool keeps are closed by it (``nonce_pool_trim``), their
rent withdrawn to the platform fee payer.

Tenants' own nonce accounts (docs/transactions.md, "Tenant durable nonce accounts") share
the lease: a request leases the one it names (``nonce_lease(named=...)``), else a free one
of its tenant's, else one of the pool. The pool's fill, trim and quota never touch them.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from solders.hash import Hash
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import (
    AdvanceNonceAccountParams,
    CreateAccountParams,
    InitializeNonceAccountParams,
    WithdrawNonceAccountParams,
    advance_nonce_account,
    create_account,
    initialize_nonce_account,
    withdraw_nonce_account,
)

from ledger_project.api.errors import LedgerError, NotFoundError, RateLimitedError, ServiceUnavailableError

from . import platform_keys
from chain import builder
from chain.errors import SimulationFailed
from chain.rpc import rpc_for
from chain.errors import ChainRefused
from .fee_payers import platform_fee_payer
from .models import NonceAccount, NonceState
from .platform_keys import platform_addresses_forget

logger = logging.getLogger("ledger.transactions")

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")


class NoncePoolEmpty(ServiceUnavailableError):
    """503: every pooled nonce account is leased; the pool task is creating more."""

    code = "NONCE_POOL_EMPTY"

    def __init__(self, cluster: str, retry_after: int):
        self.retry_after = retry_after
        super().__init__(
            f"No durable nonce account of {cluster} is free; more are being created. Retry after {retry_after} s, "
            "or use messageLifetimeStrategy RECENT_BLOCKHASH."
        )


def _free(cluster: str):
    """Free accounts of the platform's pool (never a tenant's)."""
    return NonceAccount.objects.filter(cluster=cluster, tenant__isnull=True, state=NonceState.READY, leased_by__isnull=True, leased_at__isnull=True)


def _free_of_tenant(cluster: str, tenant):
    """Free accounts of ``tenant``'s own whose authority the service holds: the ones a
    request may be given without naming them (one with an off-platform authority would
    leave it waiting for a signature it did not expect)."""
    return NonceAccount.objects.filter(
        cluster=cluster, tenant=tenant, state=NonceState.READY, leased_by__isnull=True, leased_at__isnull=True, authority_key__isnull=False,
    )


def _claim(free) -> NonceAccount | None:
    """Lease one row of ``free`` (a queryset of free accounts): its own short committed
    write. ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL; the conditional update is the
    claim on both (SQLite ignores FOR UPDATE; a second request reading the same row finds
    nothing to update and tries the next)."""
    for _ in range(5):
        with transaction.atomic():
            candidate = free.select_for_update(skip_locked=True).order_by("pk").only("pk").first()
            if candidate is None:
                return None
            if free.filter(pk=candidate.pk).update(leased_at=timezone.now()):
                return candidate
    return None


class NonceLeaseQuotaExceeded(RateLimitedError):
    """429: the tenant already holds LEDGER_NONCE_LEASES_PER_TENANT nonce leases."""

    code = "NONCE_LEASE_QUOTA_EXCEEDED"

    def __init__(self, held: int, retry_after: int):
        super().__init__(
            retry_after,
            f"This tenant already holds {held} durable nonce leases (transactions not yet landed or ended); "
            "sign, cancel or let some expire, or use messageLifetimeStrategy RECENT_BLOCKHASH.",
        )


NAMED_NONCE_FIELD = "svmTransactionConfig.durableNonceAccount"


def nonce_lease(*, cluster: str, tenant=None, named: int | None = None) -> NonceAccount:
    """Lease a free, ready nonce account: its own short committed write.

    ``named`` (the pk of a tenant's account, svmTransactionConfig.durableNonceAccount):
    that one, or 400 (NONCE_ACCOUNT_NOT_READY, NONCE_ACCOUNT_IN_USE). Otherwise a free
    account of ``tenant``'s own first, then one of the platform's pool. Never creates an
    account on chain (that is the pool task's job): when the pool has none free the pool
    task is kicked and NONCE_POOL_EMPTY (503, Retry-After) is raised; a tenant holding
    LEDGER_NONCE_LEASES_PER_TENANT pool leases gets 429. The caller binds the lease to its
    transaction (``leased_by``) when it records it, or releases it (``nonce_lease_release``);
    a lease never bound is reclaimed by the pool task.
    """
    if named is not None:
        return _lease_named(cluster, tenant, named)
    if tenant is not None:
        own = _claim(_free_of_tenant(cluster, tenant))
        if own is not None:
            return NonceAccount.objects.select_related("authority_key").get(pk=own.pk)
        # The quota protects the shared pool: leases of the tenant's own accounts do not count.
        held = NonceAccount.objects.filter(tenant__isnull=True, leased_by__tenant=tenant).count()
        if held >= settings.LEDGER_NONCE_LEASES_PER_TENANT:
            raise NonceLeaseQuotaExceeded(held, settings.LEDGER_NONCE_POOL_RETRY_AFTER_SECONDS)
    row = _claim(_free(cluster))
    if row is None or _free(cluster).count() < max(settings.LEDGER_NONCE_POOL_LOW_WATER, _held(cluster) // 2):
        _kick_fill(cluster)
    if row is None:
        raise NoncePoolEmpty(cluster, settings.LEDGER_NONCE_POOL_RETRY_AFTER_SECONDS)
    return NonceAccount.objects.select_related("authority_key").get(pk=row.pk)


def _lease_named(cluster: str, tenant, pk: int) -> NonceAccount:
    """Lease the tenant's account ``pk``: the conditional update on "free" is the claim, so
    of two requests naming it at once exactly one gets it (the other: 400
    NONCE_ACCOUNT_IN_USE), and never one leased to a transaction still pending."""
    mine = NonceAccount.objects.filter(pk=pk, cluster=cluster, tenant=tenant) if tenant is not None else NonceAccount.objects.none()
    free = mine.filter(state=NonceState.READY, leased_by__isnull=True, leased_at__isnull=True)
    if free.update(leased_at=timezone.now()):
        return NonceAccount.objects.select_related("authority_key").get(pk=pk)
    row = mine.select_related("leased_by").first()
    if row is None:  # resolved through the tenant's lookup, so only a programming error
        raise NotFoundError("No such durable nonce account.", field=NAMED_NONCE_FIELD)
    if row.state != NonceState.READY:
        what = {NonceState.CREATING: "is still being created (its creation transaction has not confirmed)",
                NonceState.FAILED: "was never created (its creation transaction did not land)"}.get(row.state, f"is {row.state}")
        raise LedgerError(f"Durable nonce account {row.address} {what}.", field=NAMED_NONCE_FIELD, code="NONCE_ACCOUNT_NOT_READY")
    by = f" by transaction {row.leased_by.offchain_id} ({row.leased_by.status})" if row.leased_by is not None else " by a request in progress"
    raise LedgerError(
        f"Durable nonce account {row.address} is leased{by}: one nonce serves one pending transaction. "
        "Retry once that transaction has ended, or name another account.",
        field=NAMED_NONCE_FIELD, code="NONCE_ACCOUNT_IN_USE",
    )


def _held(cluster: str) -> int:
    """Pool accounts leased now (bound to a transaction, or claimed by a request in progress)."""
    return NonceAccount.objects.filter(cluster=cluster, tenant__isnull=True, state=NonceState.READY).filter(
        Q(leased_by__isnull=False) | Q(leased_at__isnull=False)).count()


def pool_target(cluster: str) -> int:
    """Free accounts the pool keeps: LEDGER_NONCE_POOL_TARGET, or as many as are leased now
    when more. Demand sets the reserve: a lease lasts until its transaction finalizes (tens
    of seconds), so under steady use the pool keeps a second set free for the next requests
    instead of answering them NONCE_POOL_EMPTY while it creates accounts one by one; fill
    and trim read the same figure, so they never undo each other while the load lasts."""
    return max(settings.LEDGER_NONCE_POOL_TARGET, _held(cluster))


def nonce_lease_release(*, nonce_account_id: int) -> None:
    """End a lease (the request that took it did not record a transaction, or the
    transaction relying on it finalized or is provably dead)."""
    NonceAccount.objects.filter(pk=nonce_account_id).update(leased_by=None, leased_at=None)


def _kick_fill(cluster: str) -> None:
    from .tasks import fill_nonce_pool

    try:
        fill_nonce_pool.delay(cluster=cluster)
    except Exception:  # noqa: BLE001 - a broker outage must not fail the request; beat fills later
        logger.warning("could not queue the nonce pool fill of %s; beat will", cluster, exc_info=True)


def nonce_pool_reclaim(*, cluster: str | None = None) -> int:
    """Free leases never bound to a transaction within the timeout (the request that took
    them crashed or failed before recording its transaction)."""
    cutoff = timezone.now() - timedelta(seconds=settings.LEDGER_NONCE_LEASE_TIMEOUT_SECONDS)
    rows = NonceAccount.objects.filter(leased_by__isnull=True, leased_at__lt=cutoff)
    if cluster is not None:
        rows = rows.filter(cluster=cluster)
    return rows.update(leased_at=None)


def nonce_pool_fill(*, cluster: str, target: int | None = None) -> int:
    """Bring the free part of the pool up to ``target`` (``pool_target``: the configured
    target, or as many as are leased now when more), never
    past LEDGER_NONCE_POOL_MAX accounts in all (free and leased); finish
    accounts a crash left CREATING. Returns how many accounts became READY."""
    target = pool_target(cluster) if target is None else target
    nonce_pool_reclaim(cluster=cluster)
    ready = 0
    stale = timezone.now() - timedelta(seconds=30)  # younger ones are another fill's, in progress
    # Tenants' accounts are finished by their own creation transactions, never here.
    for row in NonceAccount.objects.select_related("authority_key").filter(cluster=cluster, tenant__isnull=True, state=NonceState.CREATING, created_at__lt=stale).order_by("pk"):
        _nonce_account_finish(row)
        ready += 1
    # LEDGER_NONCE_POOL_MAX bounds the rent the platform fee payer locks in nonce accounts:
    # past it no account is created however many leases are held (a lease then answers 503).
    pool_max = settings.LEDGER_NONCE_POOL_MAX
    on_chain = NonceAccount.objects.filter(cluster=cluster, tenant__isnull=True).exclude(state=NonceState.CLOSED)
    while _free(cluster).count() < target and on_chain.count() < pool_max:
        _nonce_account_finish(nonce_account_record(cluster=cluster))
        ready += 1
    return ready


def nonce_account_record(*, cluster: str) -> NonceAccount:
    """Record a new pool entry (state CREATING) with its keys: committed before anything is
    sent, so no account can exist on chain without its row."""
    from custody.services import managed_key_generate

    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("nonce accounts are recorded in their own committed transaction, never inside a request's")
    account_key, authority_key = managed_key_generate(), managed_key_generate()
    platform_addresses_forget()
    return NonceAccount.objects.create(
        cluster=cluster, address=account_key.public_key, account_key=account_key, authority=authority_key.public_key, authority_key=authority_key,
        state=NonceState.CREATING,
    )


def _platform_sign(message, payer, *keys: tuple[Pubkey, object]) -> dict[str, str]:
    """Sign a message the platform authored for its own nonce accounts (create, advance,
    close) through the engine's one signing point, as an operation the platform authored."""
    from .specs import SignerSpec

    specs = [payer, *(SignerSpec(pubkey, key, platform=True) for pubkey, key in keys)]
    return platform_keys.engine_sign(builder.message_bytes(message), message, specs, grants=platform_keys.AUTHORED_BY_PLATFORM)


def _is_pool_nonce(rpc, row: NonceAccount) -> bool:
    account = rpc.account(Pubkey.from_string(row.address))
    return (
        account is not None
        and account.owner == SYSTEM_PROGRAM
        and len(account.data) >= builder.NONCE_ACCOUNT_SIZE
        and bytes(account.data[8:40]) == bytes(Pubkey.from_string(row.authority))
    )


def _wait_landed(rpc, signature, what: str, attempts: int = 200) -> int:
    """The slot the transaction landed in (reads of what it wrote carry it: minContextSlot)."""
    for _ in range(attempts):
        status = rpc.signature_statuses([signature])[0]
        if status is not None:
            if status.err is not None:
                raise RuntimeError(f"{what} failed: {status.err}")
            return status.slot
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not land")


def _next_blockhash(rpc, address: Pubkey, attempts: int = 100, *, written: int | None = None) -> bool:
    """Wait until the nonce stored in ``address`` can be advanced or withdrawn: the runtime
    refuses both while the latest blockhash is the one it was stored under ("nonce can only
    advance once per slot"). The stored value is derived from that blockhash, never equal
    to it (``builder.durable_nonce_of``). Returns whether the blockhash moved on in time.
    ``written``: the slot of the service's own write of the account (its creation, an
    advance) — both reads are at least that recent, so a node behind it answers -32016
    (retried) rather than the account as it was before, or a blockhash older than it."""
    stored = builder.nonce_value(rpc, address, min_context_slot=written)
    for _ in range(attempts):
        if builder.durable_nonce_of(rpc.latest_blockhash(min_context_slot=written).blockhash) != stored:
            return True
        time.sleep(0.05)
    return False


def nonce_wait_usable(rpc, address: Pubkey) -> bool:
    """Wait (a few seconds at most) until the nonce ``address`` holds can be used: not
    stored under the latest blockhash (``_next_blockhash``)."""
    return _next_blockhash(rpc, address)


def later_slot(slot: int | None):
    """An update of ``written_slot`` to ``slot`` that never moves it back (a late record of
    an older write keeps the newer one)."""
    from django.db.models import F, Value
    from django.db.models.functions import Coalesce, Greatest

    return F("written_slot") if slot is None else Greatest(Coalesce(F("written_slot"), Value(0)), Value(int(slot)))


def _nonce_account_finish(row: NonceAccount) -> None:
    """Create and initialize the recorded account on chain (one transaction: either both
    happened or neither), unless it already is; then mark it READY."""
    rpc = rpc_for(row.cluster)
    written = row.written_slot
    if not _is_pool_nonce(rpc, row):
        payer = platform_fee_payer(row.cluster)
        address = Pubkey.from_string(row.address)
        lamports = rpc.minimum_balance_for_rent_exemption(builder.NONCE_ACCOUNT_SIZE)
        instructions = [
            create_account(CreateAccountParams(from_pubkey=payer.pubkey, to_pubkey=address, lamports=lamports, space=builder.NONCE_ACCOUNT_SIZE, owner=SYSTEM_PROGRAM)),
            initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=address, authority=Pubkey.from_string(row.authority))),
        ]
        built = builder.build(builder.BuildPlan(instructions=instructions, fee_payer=payer.pubkey, version="LEGACY"), rpc)
        signatures = _platform_sign(built.message, payer, (address, row.account_key))
        try:
            signature = rpc.send_raw(bytes(builder.assemble(built.message, signatures)))
        except SimulationFailed:
            # e.g. "already in use": a concurrent fill created it first.
            if not _is_pool_nonce(rpc, row):
                raise
        else:
            written = _wait_landed(rpc, signature, "nonce account creation")
        _next_blockhash(rpc, address, written=written)
    NonceAccount.objects.filter(pk=row.pk, state=NonceState.CREATING).update(state=NonceState.READY, written_slot=later_slot(written))


def nonce_advance(*, cluster: str, nonce_address: str, expected: str) -> bool:
    """Advance a nonce that still holds ``expected`` with a transaction of our own that
    uses that very value: when it lands, any other transaction built on ``expected`` can
    never execute (each nonce value is consumed once). Returns whether it landed; False
    too when the service does not hold the account's authority key (a tenant's account
    with an off-platform authority: ``nonce_spend`` says what then)."""
    row = NonceAccount.objects.select_related("authority_key").get(cluster=cluster, address=nonce_address)
    if row.authority_key is None:
        return False
    rpc = rpc_for(cluster)
    address = Pubkey.from_string(nonce_address)
    if str(builder.nonce_value(rpc, address, min_context_slot=row.written_slot)) != expected:
        return False
    payer = platform_fee_payer(cluster)
    authority = Pubkey.from_string(row.authority)
    message = Message.new_with_blockhash(
        [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=address, authorized_pubkey=authority))], payer.pubkey, Hash.from_string(expected)
    )
    signatures = _platform_sign(message, payer, (authority, row.authority_key))
    try:
        signature = rpc.send_raw(bytes(builder.assemble(message, signatures)))
    except SimulationFailed:
        return False  # the nonce moved on meanwhile (whoever moved it, ``expected`` is spent)
    written = _wait_landed(rpc, signature, "nonce advance")
    NonceAccount.objects.filter(pk=row.pk).update(written_slot=later_slot(written))
    _next_blockhash(rpc, address, written=written)
    return True


def stored_nonce(rpc, address: Pubkey) -> str | None:
    """The nonce value ``address`` holds, or None when it is no nonce account (any more)."""
    try:
        return str(builder.nonce_value(rpc, address))
    except ChainRefused:  # closed (withdrawn in full) or never created
        return None


def nonce_spend(*, cluster: str, nonce_address: str, expected: str) -> bool:
    """Make sure no transaction built on ``expected`` can execute any more, before the
    account is leased again. Returns True when that holds: the nonce already moved on (or
    the account is gone), or the service advanced it now (``nonce_advance``; raises when
    the advance did not land, so the caller retries). False when the nonce still holds
    ``expected`` and the service cannot advance it — a tenant's account whose authority
    signs off platform: its lease is then kept until the chain shows the nonce moved on
    (``nonce_leases_sweep``), which the authority can do itself with AdvanceNonceAccount."""
    row = NonceAccount.objects.select_related("authority_key").get(cluster=cluster, address=nonce_address)
    if row.authority_key is not None:
        try:
            nonce_advance(cluster=cluster, nonce_address=nonce_address, expected=expected)
        except (LedgerError, ChainRefused):  # no nonce account any more: nothing can use its value
            return True
        return True
    return stored_nonce(rpc_for(cluster), Pubkey.from_string(nonce_address)) != expected


_ENDED = ("FAILED", "EXPIRED", "CANCELLED")


def clusters_with_kept_leases() -> list[str]:
    """Clusters where a lease is still held by a transaction that ended (``nonce_leases_sweep``)."""
    return list(NonceAccount.objects.filter(leased_by__status__in=_ENDED).order_by().values_list("cluster", flat=True).distinct())


def nonce_leases_sweep(*, cluster: str) -> int:
    """End leases still held by transactions that ended without landing (FAILED, EXPIRED,
    CANCELLED) because their nonce could not be spent then (``nonce_spend``: an
    off-platform authority), once the chain shows it moved on. Returns how many ended."""
    released = 0
    for row in NonceAccount.objects.select_related("leased_by").filter(cluster=cluster, leased_by__status__in=_ENDED).order_by("pk"):
        tx = row.leased_by
        if nonce_spend(cluster=cluster, nonce_address=row.address, expected=tx.blockhash):
            released += NonceAccount.objects.filter(pk=row.pk, leased_by=tx).update(leased_by=None, leased_at=None)
    return released


def nonce_pool_trim(*, cluster: str, keep: int | None = None) -> int:
    """Close free accounts beyond ``keep`` (LEDGER_NONCE_POOL_TRIM_ABOVE, never below
    ``pool_target``, so fill and trim never undo each other): each is withdrawn in
    full to the platform fee payer, which paid its rent. Finishes accounts a crash left
    CLOSING first. Never touches a leased account. Returns how many became CLOSED."""
    if keep is None:
        keep = max(settings.LEDGER_NONCE_POOL_TRIM_ABOVE, pool_target(cluster))
    closed = 0
    for row in NonceAccount.objects.select_related("authority_key").filter(cluster=cluster, tenant__isnull=True, state=NonceState.CLOSING).order_by("pk"):
        closed += _nonce_account_close(row)
    while _free(cluster).count() > keep:
        row = _claim_for_closing(cluster)
        if row is None:
            break
        closed += _nonce_account_close(row)
    return closed


def _claim_for_closing(cluster: str) -> NonceAccount | None:
    """Take one free account out of the pool: READY → CLOSING, committed before anything is
    sent. The conditional update on the very condition a lease claims with
    (``_free``) is the claim: a lease and a trim reading the same row cannot both take it
    (on PostgreSQL the second UPDATE waits for the first and then matches nothing; SQLite
    serializes them). The newest are closed, the oldest leased (``nonce_lease``)."""
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("a nonce account is claimed for closing in its own committed transaction")
    for _ in range(5):
        candidate = _free(cluster).order_by("-pk").values_list("pk", flat=True).first()
        if candidate is None:
            return None
        if _free(cluster).filter(pk=candidate).update(state=NonceState.CLOSING):
            return NonceAccount.objects.select_related("authority_key").get(pk=candidate)
    return None


def _nonce_gone(rpc, address: Pubkey) -> bool:
    # Withdrawn in full, the account is deleted. Lamports someone sends to the address
    # afterwards make a plain system account again, never a nonce: that counts as gone too.
    account = rpc.account(address)
    return account is None or len(account.data) == 0


def _nonce_account_close(row: NonceAccount) -> bool:
    """Withdraw the whole balance of a CLOSING account to the platform fee payer, and mark
    it CLOSED once the chain shows it gone. Safe to repeat at any point: a withdraw of the
    whole balance succeeds once, later ones are refused. Returns whether it is CLOSED; if
    not, it stays CLOSING for the next run."""
    rpc = rpc_for(row.cluster)
    address = Pubkey.from_string(row.address)
    if not _nonce_gone(rpc, address):
        # The runtime refuses to empty a nonce account while the latest blockhash is the
        # one its nonce was stored under ("nonce can only advance once per slot"): wait for
        # the next, or leave it to the next run.
        if not _next_blockhash(rpc, address):
            logger.info("nonce account %s: its nonce is still the current one; closing it next run", row.address)
            return False
        payer = platform_fee_payer(row.cluster)
        authority = Pubkey.from_string(row.authority)
        lamports = rpc.account(address).lamports
        instruction = withdraw_nonce_account(WithdrawNonceAccountParams(nonce_pubkey=address, authorized_pubkey=authority, to_pubkey=payer.pubkey, lamports=lamports))
        built = builder.build(builder.BuildPlan(instructions=[instruction], fee_payer=payer.pubkey, version="LEGACY"), rpc)
        signatures = _platform_sign(built.message, payer, (authority, row.authority_key))
        try:
            _wait_landed(rpc, rpc.send_raw(bytes(builder.assemble(built.message, signatures))), "nonce account close")
        except (SimulationFailed, RuntimeError) as exc:
            # Refused (e.g. a concurrent close emptied it first) or not landed in time:
            # the chain decides below.
            logger.info("nonce account %s: withdraw not done (%s)", row.address, exc)
        if not _nonce_gone(rpc, address):
            return False
    return _mark_closed(row)


def _mark_closed(row: NonceAccount) -> bool:
    return bool(NonceAccount.objects.filter(pk=row.pk, state=NonceState.CLOSING).update(state=NonceState.CLOSED, closed_at=timezone.now()))
