"""Writes of the market data area (docs/marketdata.md): Create Onchain Data Source (a new
feed, or one onboarded with ``alreadyOnchain``) and Update Oracle Data Source Definition.
Refresh Oracle Data Source is in refresh.py; effects on confirmation in effects.py.

Every operation has the house's shape (docs/transactions.md, "Path of a mutation"): read
and check, build / simulate / sign with no lock held, then one write phase that re-checks
and records the transaction with the source's in-flight marker set (one transaction-backed
change of a feed at a time; 409 OPERATION_IN_PROGRESS meanwhile). The feed's own rules
(authority, rounds, staleness, the exponent's and staleness bound's ranges) are the
price_feed program's: its refusal in simulation is a 400 PROGRAM_ERROR naming its error
and the field it is about (onchain.ERROR_FIELDS).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from custody import services as custody
from accounts.locks import ensure_no_operation_in_flight
from accounts.lookup import resolve_account, resolve_own_account
from accounts.models import Account
from accounts.services import funding_effects, funding_signer
from accounts.signers import can_sign_on_platform, ensure_usable, signer_for, transaction_config
from instruments.lookup import resolve_instrument
from ledger_project.api.commands import UNSET, camel
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from marketdata.jobs import job_hash, parse_job
from positions.services import usable_instrument
from programs.price_feed import client
from chain.errors import ProgramError
from chain.rpc import rpc_for
from transactions.models import Transaction, TransactionEvent
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import onchain, operations
from .commands import CreateDataSource, DataDetails, OracleDetails, UpdateDataSource
from .locks import lock_source
from .models import LIVE_STATUSES, DataSourceEvaluation, DataSourceStatus, OnchainDataSource
from .schedule import schedule_set, schedule_switch

# The fields a refusal names, as the commands' Python paths (the door maps them to the
# request's: ledger_project/api/commands.py).
DETAILS = "partner_oracle_details"
JOB_FIELD = f"{DETAILS}.job_definition"
SOURCE_FIELD = "onchain_data_source"
AUTHORITY_FIELD = "oracle_data_source_authority"
EXISTING_FIELD = "existing_onchain_data_source_account"
INSTRUMENT_FIELD = "financial_instrument"


@dataclass
class SourceResult:
    source: OnchainDataSource
    transaction: Transaction | None
    evaluation: DataSourceEvaluation | None = None


# --- shared ----------------------------------------------------------------------------------


def parsed_job(text: str, field: str = JOB_FIELD):
    """The job of a definition and its hash (hex); 400 naming the bad part
    (``partner_oracle_details.job_definition.tasks[1].httpTask.url``: inside the definition,
    the job's own names)."""
    return parse_job(text, root=field), job_hash(text).hex()


def build(ctx: OperationContext, *, operation: str, instructions, signers: list[SignerSpec]):
    """transaction_build; a refusal by the feed program names the field it is about."""
    try:
        return transaction_build(context=ctx, operation=operation, instructions=instructions, signers=signers,
                                 config=transaction_config(ctx.tenant, ctx.cluster, ctx.svm_config))
    except ProgramError as exc:
        exc.field = onchain.ERROR_FIELDS.get(exc.failure.name) if exc.failure.program == onchain.PROGRAM else None
        raise


def authority_signer(tenant, source: OnchainDataSource, field: str = SOURCE_FIELD) -> SignerSpec:
    """Who signs the feed's changes: its authority account (its own rules: status, who may
    use its key) or the key the service generated for it."""
    if source.authority_account is not None:
        return signer_for(source.authority_account, tenant, field=field, require_platform=True)
    return SignerSpec(Pubkey.from_string(source.authority_address), source.authority_key)


def record_admin_request(tx: Transaction, requested_by: str | None) -> None:
    """A transaction an admin action recorded (no API key): who asked (docs/admin.md)."""
    if requested_by:
        TransactionEvent.objects.create(transaction=tx, kind="REQUESTED_IN_ADMIN", detail={"user": requested_by})


def _live_conflict(tenant, instrument, kind: str, *, exclude_pk=None) -> None:
    live = OnchainDataSource.objects.for_tenant(tenant).filter(instrument=instrument, data_kind=kind, status__in=LIVE_STATUSES)
    if exclude_pk is not None:
        live = live.exclude(pk=exclude_pk)
    if live.exists():
        raise _exists(instrument, kind)


def _exists(instrument, kind: str) -> ConflictError:
    return ConflictError(f"The organization already has an active {kind} data source for this instrument ({instrument.al_id or instrument.address}): "
                         "make it INACTIVE first (Update Oracle Data Source Definition, status).", field=INSTRUMENT_FIELD, code="DATA_SOURCE_EXISTS")


def _save_new(source: OnchainDataSource, instrument, kind: str) -> None:
    try:
        with db_transaction.atomic():  # a savepoint: the write phase stays usable for the 409
            source.save(force_insert=True)
    except IntegrityError as exc:  # a concurrent request recorded a live source, or this feed, first
        raise _exists(instrument, kind) from exc


# --- Create Onchain Data Source ----------------------------------------------------------------


@dataclass(frozen=True)
class Authority:
    """The feed's authority: an account of the organization whose key the service holds, or
    a key generated for the feed (``new``: stored in the write phase)."""

    pubkey: Pubkey
    account: Account | None
    key: object | None  # accounts.ManagedKey
    new: bool = False

    @property
    def signer(self) -> SignerSpec:
        return SignerSpec(self.pubkey, self.key)


def _authority_account(tenant, account: Account) -> Authority:
    ensure_usable(account, field=AUTHORITY_FIELD)
    if not can_sign_on_platform(account, tenant):
        raise LedgerError("The service refreshes the feed unattended, so its authority must be a managed account of the organization (the service holds "
                          "its key); omit oracleDataSourceAuthority to have the service generate one.", field=AUTHORITY_FIELD, code="AUTHORITY_NOT_MANAGED")
    return Authority(Pubkey.from_string(account.address), account, account.managed_key)


def _authority(tenant, cluster: str, lookup: dict | None) -> Authority:
    if not lookup:
        key = custody.managed_key_generate(save=False)
        return Authority(Pubkey.from_string(key.public_key), None, key, new=True)
    return _authority_account(tenant, resolve_own_account(tenant, cluster, lookup, field=AUTHORITY_FIELD))


def _draft(tenant, cluster: str, data: CreateDataSource, instrument, hash_hex: str) -> OnchainDataSource:
    details, data_details = data.partner_oracle_details, data.data_details or DataDetails()
    return OnchainDataSource(
        tenant=tenant, cluster=cluster, instrument=instrument, mint_address=instrument.address, oracle_kind=details.kind,
        data_kind=data_details.kind or "PRICE", rating_provider=data_details.rating_provider or "", job_definition=details.job_definition, job_hash=hash_hex,
        exponent=details.exponent if details.exponent is not None else settings.LEDGER_MARKETDATA_DEFAULT_EXPONENT,
        max_staleness_seconds=details.max_staleness_seconds or settings.LEDGER_MARKETDATA_DEFAULT_MAX_STALENESS_SECONDS,
    )


def _refresh_every(details: OracleDetails) -> int | None:
    if details.refresh_interval_seconds is not UNSET:
        return details.refresh_interval_seconds  # None: refreshed on demand only
    return settings.LEDGER_MARKETDATA_DEFAULT_REFRESH_SECONDS


def data_source_create(ctx: OperationContext, *, data: CreateDataSource) -> SourceResult:
    """Create Onchain Data Source: a new feed account (System CreateAccount + the program's
    Initialize, signed by the new feed's throwaway key, the authority and the account
    paying its rent), PENDING until the transaction confirms; or, with ``alreadyOnchain``,
    an existing feed onboarded after reading it from the chain (no transaction)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    _, hash_hex = parsed_job(data.partner_oracle_details.job_definition)
    instrument = usable_instrument(resolve_instrument(tenant, cluster, data.financial_instrument, field=INSTRUMENT_FIELD), INSTRUMENT_FIELD)
    source = _draft(tenant, cluster, data, instrument, hash_hex)
    _live_conflict(tenant, instrument, source.data_kind)
    program = onchain.program_id(cluster)
    source.program_address = str(program)
    every = _refresh_every(data.partner_oracle_details)
    if data.already_onchain:
        return _onboard(tenant, cluster, data, source, every)

    authority = _authority(tenant, cluster, data.oracle_data_source_authority)
    feed = Keypair()
    rent = rpc_for(cluster).minimum_balance_for_rent_exemption(client.FEED_SIZE)
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent, destination_type="MANAGED")
    instructions = [
        client.create_feed_account(program, payer=funding.pubkey, feed=feed.pubkey(), lamports=rent),
        client.initialize(program, feed=feed.pubkey(), authority=authority.pubkey, mint=Pubkey.from_string(instrument.address), exponent=source.exponent,
                          max_staleness=source.max_staleness_seconds, job_hash=bytes.fromhex(hash_hex)),
    ]
    # The feed's key signs its creation only (it owns nothing afterwards): held in memory,
    # never stored (transactions.services.SignerSpec.keypair).
    signers = [funding.signer, SignerSpec(feed.pubkey(), keypair=feed), authority.signer]
    prepared = build(ctx, operation=operations.CREATE, instructions=instructions, signers=signers)

    with write_phase(on_abort=prepared.release):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        source.address, source.authority_address, source.authority_account = str(feed.pubkey()), str(authority.pubkey), authority.account
        source.authority_key = custody.managed_key_store(authority.key) if authority.new else None
        source.rent_payer_address = str(funding.pubkey)
        _save_new(source, instrument, source.data_kind)
        tx = transaction_record(prepared, effects_data={"dataSource": str(source.offchain_id), **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
        source.creation_transaction = source.last_transaction = source.pending_transaction = tx
        schedule_set(source, every=every)
        source.save(update_fields=["creation_transaction", "last_transaction", "pending_transaction", "schedule", "updated_at"])
    return SourceResult(source, tx)


def _mismatch(message: str, field: str, code: str = "FEED_MISMATCH") -> LedgerError:
    return LedgerError(message, field=field, code=code)


def _onboard(tenant, cluster: str, data: CreateDataSource, source: OnchainDataSource, every: int | None) -> SourceResult:
    """alreadyOnchain: the feed at existingOnchainDataSourceAccount, read from the chain,
    must be the program's and agree with the request (mint, authority, job hash, and the
    exponent and staleness bound when given); recorded ACTIVE, no transaction."""
    target = resolve_account(tenant, cluster, data.existing_onchain_data_source_account, field=EXISTING_FIELD, allow_off_platform=True)
    state, slot = onchain.read_feed(cluster, target.address, source.program_address)
    if state is None:
        raise LedgerError(f"No price feed of the {onchain.PROGRAM} program is at this address on {cluster}.", field=EXISTING_FIELD, code="NOT_A_FEED")
    if str(state.mint) != source.mint_address:
        raise _mismatch(f"The feed prices the mint {state.mint}, not this instrument's.", INSTRUMENT_FIELD)
    if state.job_hash.hex() != source.job_hash:
        raise _mismatch("The feed records another job definition's hash (SHA-256 of its canonical JSON, docs/marketdata.md).", JOB_FIELD, "JOB_HASH_MISMATCH")
    details = data.partner_oracle_details
    for name, given, held in (("exponent", details.exponent, state.exponent), ("max_staleness_seconds", details.max_staleness_seconds, state.max_staleness)):
        if given is not None and given != held:
            raise _mismatch(f"The feed's {camel(name)} is {held}.", f"{DETAILS}.{name}")
    lookup = data.oracle_data_source_authority
    if lookup:
        authority = _authority_account(tenant, resolve_own_account(tenant, cluster, lookup, field=AUTHORITY_FIELD))
        if authority.pubkey != state.authority:
            raise _mismatch(f"The feed's authority is {state.authority}.", AUTHORITY_FIELD, "AUTHORITY_MISMATCH")
    else:
        account = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=str(state.authority)).select_related("managed_key").first()
        if account is None:
            raise LedgerError(f"The feed's authority {state.authority} is not an account of the organization: the service could not sign its updates.",
                              field=AUTHORITY_FIELD, code="AUTHORITY_NOT_MANAGED")
        authority = _authority_account(tenant, account)
    source.exponent, source.max_staleness_seconds = state.exponent, state.max_staleness
    with write_phase():
        source.address, source.authority_address, source.authority_account = target.address, str(state.authority), authority.account
        source.status, source.was_onchain_already, source.last_round = DataSourceStatus.ACTIVE, True, state.round
        for name, value in onchain.feed_record_fields(state, slot).items():
            setattr(source, name, value)
        _save_new(source, source.instrument, source.data_kind)
        schedule_set(source, every=every)
        source.save(update_fields=["schedule", "updated_at"])
    return SourceResult(source, None)


# --- Update Oracle Data Source Definition --------------------------------------------------------


def _not_onchain(source: OnchainDataSource, field: str) -> LedgerError:
    why = "its creation has not confirmed yet" if source.status == DataSourceStatus.PENDING else "its creation failed: no feed exists on chain"
    return LedgerError(f"The data source is {source.status} ({why}): only an ACTIVE or INACTIVE one changes.", field=field, code="DATA_SOURCE_NOT_ONCHAIN")


def _changes_offchain(source: OnchainDataSource, data: UpdateDataSource) -> dict:
    """The offchain changes ``data`` asks for, checked: {field: value}."""
    changes: dict = {}
    details = data.partner_oracle_details or OracleDetails()
    rating = (data.data_details or DataDetails()).rating_provider
    if rating is not UNSET:
        changes["rating_provider"] = rating or ""
    if data.status and data.status != source.status:
        if source.status not in (DataSourceStatus.ACTIVE, DataSourceStatus.INACTIVE):
            raise _not_onchain(source, "status")
        changes["status"] = data.status
    if details.refresh_interval_seconds is not UNSET:
        changes["every"] = details.refresh_interval_seconds
    return changes


def data_source_update(ctx: OperationContext, *, source: OnchainDataSource, data: UpdateDataSource, requested_by: str | None = None) -> SourceResult:
    """Update Oracle Data Source Definition: a new job definition is recorded on chain
    (SetJobHash signed by the authority) and takes effect once that confirms; the rating
    provider, the refresh interval and the status (ACTIVE / INACTIVE: refreshed or not)
    change at once. Patch semantics: what the body leaves out stays."""
    tenant = ctx.tenant
    text = (data.partner_oracle_details or OracleDetails()).job_definition
    changes = _changes_offchain(source, data)
    new_job = None
    if text is not None:
        _, hash_hex = parsed_job(text)
        if hash_hex != source.job_hash:
            new_job = (text, hash_hex)
        elif text != source.job_definition:
            changes["job_definition"] = text  # the same job (same canonical JSON), written otherwise
    prepared = None
    if new_job is not None:
        if source.status not in (DataSourceStatus.ACTIVE, DataSourceStatus.INACTIVE):
            raise _not_onchain(source, SOURCE_FIELD)
        ensure_no_operation_in_flight(source, field=SOURCE_FIELD)
        instruction = client.set_job_hash(Pubkey.from_string(source.program_address), feed=Pubkey.from_string(source.address),
                                          authority=Pubkey.from_string(source.authority_address), job_hash=bytes.fromhex(new_job[1]))
        prepared = build(ctx, operation=operations.SET_JOB_HASH, instructions=[instruction], signers=[authority_signer(tenant, source)])

    tx = None
    with write_phase(on_abort=prepared.release if prepared is not None else None):
        locked = lock_source(source.pk, tenant=tenant)
        fields = ["updated_at"]
        if prepared is not None:
            ensure_no_operation_in_flight(locked, field=SOURCE_FIELD)
            tx = transaction_record(prepared, effects_data={"dataSource": str(locked.offchain_id), "jobDefinition": new_job[0], "jobHash": new_job[1]},
                                    api_key=ctx.api_key, request_id=ctx.request_id)
            record_admin_request(tx, requested_by)
            locked.last_transaction = locked.pending_transaction = tx
            fields += ["last_transaction", "pending_transaction"]
        for name in ("rating_provider", "job_definition"):
            if name in changes:
                setattr(locked, name, changes[name])
                fields.append(name)
        if "status" in changes:
            if changes["status"] == DataSourceStatus.ACTIVE:
                _live_conflict(tenant, locked.instrument, locked.data_kind, exclude_pk=locked.pk)
            locked.status = changes["status"]
            fields.append("status")
        if "every" in changes:
            schedule_set(locked, every=changes["every"], enabled=locked.status == DataSourceStatus.ACTIVE and changes["every"] is not None)
            fields.append("schedule")
        elif "status" in changes:
            schedule_switch(locked, enabled=locked.status == DataSourceStatus.ACTIVE)
        try:
            with db_transaction.atomic():
                locked.save(update_fields=fields)
        except IntegrityError as exc:  # another source of the instrument became live meanwhile
            raise _exists(locked.instrument, locked.data_kind) from exc
    return SourceResult(locked, tx)

