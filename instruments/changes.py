"""Changes to recorded instruments (docs/instruments.md): Update, Pause / Unpause, Close.
Create and onboarding are instruments/services.py, whose helpers (authorities, signers,
the result type) these share."""

from __future__ import annotations


from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from accounts.locks import ensure_no_operation_in_flight
from accounts.models import Account, AccountStatus
from accounts.services import account_update, funding_effects, funding_signer
from accounts.signers import transaction_config
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from chain.rpc import rpc_for
from transactions.models import Transaction, TransactionEvent
from transactions.services import Prepared, SignerSpec, transaction_build, transaction_record

from . import operations, webhooks
from .extensions import multiplier_of
from .locks import lock_instrument
from .models import FinancialInstrument, InstrumentStatus, PositionState, TokenVersion, authority_column
from .onchain import PROGRAMS, chain_fields, read_mint
from .token2022 import instructions as t22
from .token2022.constants import API_EXTENSIONS, AccountState, AuthorityType
from .token2022.sizes import mint_size
from .services import InstrumentResult, Authority, _authority, _signer, _hook_program


def _require_extension(instrument: FinancialInstrument, extension: str, field: str) -> None:
    if extension not in (instrument.extensions or []):
        raise LedgerError(f"The mint was created without the {extension} extension; extensions cannot be added afterwards.", field=field, code="EXTENSION_MISSING")


def _current(instrument: FinancialInstrument, role: str, given: Authority | None, field: str) -> Authority:
    """The current authority of ``role``: as recorded, and equal to ``given`` when given."""
    column = authority_column(role)
    address = getattr(instrument, f"{column}_address")
    if not address:
        raise LedgerError(f"The mint has no {role} authority.", field=field, code="NO_AUTHORITY")
    if given is not None and given.address != address:
        raise LedgerError(f"The current {role} authority is {address}.", field=field, code="AUTHORITY_MISMATCH")
    return given or Authority(address, getattr(instrument, column))


def _usable_instrument(instrument: FinancialInstrument, field: str) -> FinancialInstrument:
    if instrument.status == InstrumentStatus.CLOSED:
        raise LedgerError("The financial instrument is closed.", field=field, code="INSTRUMENT_CLOSED")
    if instrument.status == InstrumentStatus.FAILED:
        raise LedgerError("The financial instrument was never created on the network.", field=field, code="INSTRUMENT_NOT_ONCHAIN")
    return instrument


def _in_flight_check(instrument: FinancialInstrument, field: str) -> None:
    ensure_no_operation_in_flight(instrument, field=field)


def _locked_again(read: FinancialInstrument, field: str) -> FinancialInstrument:
    """Write phase: lock the instrument and re-check what the read phase relied on. A
    transaction recorded or confirmed meanwhile (last_transaction moved) means the
    instructions were built from a stale picture: 409, retry."""
    locked = lock_instrument(read.pk, tenant=read.tenant)
    _usable_instrument(locked, field)
    _in_flight_check(locked, field)
    if locked.last_transaction_id != read.last_transaction_id:
        raise ConflictError("The financial instrument changed while this request was being prepared; retry.", field=field, code="OPERATION_IN_PROGRESS")
    return locked


def _record(instrument: FinancialInstrument, prepared: Prepared, *, api_key, request_id, funded: dict | None = None) -> Transaction:
    """Write phase: the Transaction row (with ``funding_effects``' entry when the request
    funds the mint), and the instrument's in-flight marker."""
    tx = transaction_record(prepared, effects_data={"instrument": str(instrument.offchain_id), **(funded or {})}, api_key=api_key, request_id=request_id)
    FinancialInstrument.objects.for_tenant(prepared.tenant).filter(pk=instrument.pk).update(last_transaction=tx, pending_transaction=tx)
    instrument.last_transaction = instrument.pending_transaction = tx
    return tx


def instrument_update(ctx: OperationContext, *, instrument: FinancialInstrument, changes: dict) -> InstrumentResult:
    """Update Financial Instrument: patch semantics. Offchain fields change in the write
    phase (under the row lock, only the columns given); onchain ones through one
    transaction whose confirmation re-reads the mint (one at a time: in-flight marker)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    instrument = read = FinancialInstrument.objects.for_tenant(tenant).get(pk=instrument.pk)  # what the instructions are built from
    _usable_instrument(instrument, f"{p}.mintAccount")
    updates: dict[str, object] = {}  # offchain columns this request sets (applied under the lock)
    mint = Pubkey.from_string(instrument.address)
    program = PROGRAMS[instrument.version]
    config = transaction_config(tenant, cluster, ctx.svm_config)
    ixs: list = []
    signers: dict[str, SignerSpec] = {}
    funding = None  # a rent top-up's funder (funding_signer)

    def sign(authority: Authority, field: str) -> Pubkey:
        signers.setdefault(authority.address, _signer(authority, tenant, field))
        return authority.pubkey

    def lookup(name):
        return _authority(tenant, cluster, changes.get(name), f"{p}.{name}")

    onchain = changes.get("onchainData")
    if onchain:
        if instrument.version == TokenVersion.SPL or "TOKEN_METADATA" not in instrument.extensions:
            if instrument.version == TokenVersion.SPL and not onchain.get("simpleCustomMetadata"):
                for name in ("name", "symbol"):  # SPL: the service's copy is all there is
                    if onchain.get(name) is not None:
                        updates[name] = onchain[name]
            else:
                _require_extension(instrument, "TOKEN_METADATA", f"{p}.onchainData")
        else:
            authority = sign(_current(instrument, "update", None, f"{p}.onchainData"), f"{p}.onchainData")
            metadata = {"name": instrument.name, "symbol": instrument.symbol, "uri": instrument.uri, "additional": dict(instrument.onchain_metadata or {})}
            for name, tag in (("name", t22.FIELD_NAME), ("symbol", t22.FIELD_SYMBOL), ("uri", t22.FIELD_URI)):
                if onchain.get(name) is not None and onchain[name] != metadata[name]:
                    ixs.append(t22.update_token_metadata_field(mint=mint, update_authority=authority, field=tag, value=onchain[name]))
                    metadata[name] = onchain[name]
            for key, value in (onchain.get("simpleCustomMetadata") or {}).items():
                if value is None:
                    if key in metadata["additional"]:
                        ixs.append(t22.remove_token_metadata_key(mint=mint, update_authority=authority, key=key))
                        del metadata["additional"][key]
                elif metadata["additional"].get(key) != value:
                    ixs.append(t22.update_token_metadata_field(mint=mint, update_authority=authority, field=key, value=value))
                    metadata["additional"][key] = value
            if ixs:
                # The program reallocates the mint for longer metadata but does not fund it.
                rpc = rpc_for(cluster)
                needed = rpc.minimum_balance_for_rent_exemption(mint_size({API_EXTENSIONS[e] for e in instrument.extensions}, metadata))
                have = rpc.balance(mint)
                if needed > have:
                    # The top-up comes from an account of the tenant, never the platform fee payer.
                    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=needed - have, destination_type="MANAGED")
                    signers.setdefault(str(funding.pubkey), funding.signer)
                    ixs.insert(0, transfer(TransferParams(from_pubkey=funding.pubkey, to_pubkey=mint, lamports=needed - have)))
    if "decimals" in (onchain or {}) and onchain["decimals"] is not None and onchain["decimals"] != instrument.decimals:
        raise LedgerError("A mint's decimals cannot change.", field=f"{p}.onchainData.decimals", code="IMMUTABLE")

    if "updateAuthority" in changes and changes["updateAuthority"] is not None:
        new = lookup("updateAuthority")
        current = _current(instrument, "update", None, f"{p}.updateAuthority")
        if new.address != current.address:
            signer = sign(current, f"{p}.updateAuthority")
            if "TOKEN_METADATA" in instrument.extensions:
                ixs.append(t22.update_token_metadata_authority(mint=mint, current_authority=signer, new_authority=new.pubkey))
            if "METADATA_POINTER" in instrument.extensions:
                ixs.append(t22.set_authority(target=mint, current=signer, authority_type=AuthorityType.METADATA_POINTER, new_authority=new.pubkey))
            if not instrument.extensions or not ({"TOKEN_METADATA", "METADATA_POINTER"} & set(instrument.extensions)):
                raise LedgerError("The mint has no metadata whose update authority could change.", field=f"{p}.updateAuthority", code="EXTENSION_MISSING")
    if changes.get("freezeAuthority") is not None:
        new = lookup("freezeAuthority")
        current = _current(instrument, "freeze", None, f"{p}.freezeAuthority")
        if new.address != current.address:
            ixs.append(t22.set_authority(target=mint, current=sign(current, f"{p}.freezeAuthority"), authority_type=AuthorityType.FREEZE_ACCOUNT, new_authority=new.pubkey, program=program))
    if changes.get("defaultPositionState") is not None and changes["defaultPositionState"] != instrument.default_position_state:
        _require_extension(instrument, "DEFAULT_ACCOUNT_STATE", f"{p}.defaultPositionState")
        current = _current(instrument, "freeze", None, f"{p}.defaultPositionState")
        state = AccountState.FROZEN if changes["defaultPositionState"] == PositionState.FROZEN else AccountState.INITIALIZED
        ixs.append(t22.update_default_account_state(mint=mint, freeze_authority=sign(current, f"{p}.defaultPositionState"), state=state))
    if changes.get("paused") is not None and changes["paused"] != instrument.paused:
        _require_extension(instrument, "PAUSABLE", f"{p}.paused")
        current = sign(_current(instrument, "pausable", None, f"{p}.paused"), f"{p}.paused")
        ixs.append(t22.pause(mint=mint, authority=current) if changes["paused"] else t22.resume(mint=mint, authority=current))
    for role, extension, authority_type, new_name, current_name in (
        ("closing", "MINT_CLOSE_AUTHORITY", AuthorityType.CLOSE_MINT, "newClosingAuthority", "currentClosingAuthority"),
        ("pausable", "PAUSABLE", AuthorityType.PAUSE, "newPausableAuthority", "currentPausableAuthority"),
        ("scaledUiAmount", "SCALED_UI_AMOUNT", AuthorityType.SCALED_UI_AMOUNT, "newScaledUiAmountAuthority", "currentScaledUiAmountAuthority"),
        ("transferHook", "TRANSFER_HOOK", AuthorityType.TRANSFER_HOOK_PROGRAM_ID, "newTransferHookAuthority", "currentTransferHookAuthority"),
    ):
        if changes.get(new_name) is None:
            if changes.get(current_name) is not None:
                raise LedgerError(f"{current_name} goes with {new_name}.", field=f"{p}.{new_name}", code="REQUIRED")
            continue
        _require_extension(instrument, extension, f"{p}.{new_name}")
        current = _current(instrument, role, lookup(current_name), f"{p}.{current_name}")
        new = lookup(new_name)
        ixs.append(t22.set_authority(target=mint, current=sign(current, f"{p}.{current_name}"), authority_type=authority_type, new_authority=new.pubkey))
    if changes.get("scaledUiAmountMultiplier") is not None:
        _require_extension(instrument, "SCALED_UI_AMOUNT", f"{p}.scaledUiAmountMultiplier")
        multiplier = multiplier_of(changes["scaledUiAmountMultiplier"], f"{p}.scaledUiAmountMultiplier")
        current = _current(instrument, "scaledUiAmount", None, f"{p}.scaledUiAmountMultiplier")
        ixs.append(t22.update_scaled_ui_multiplier(mint=mint, authority=sign(current, f"{p}.scaledUiAmountMultiplier"), multiplier=multiplier, effective_timestamp=0))
    if changes.get("transferHookProgram") is not None:
        _require_extension(instrument, "TRANSFER_HOOK", f"{p}.transferHookProgram")
        program_auth = _hook_program(tenant, cluster, changes["transferHookProgram"], f"{p}.transferHookProgram")
        current = _current(instrument, "transferHook", None, f"{p}.transferHookProgram")
        ixs.append(t22.update_transfer_hook(mint=mint, authority=sign(current, f"{p}.transferHookProgram"), program_id=program_auth.pubkey))

    # Offchain changes apply in the write phase, with the transaction (if any).
    if "offchainData" in changes:
        updates["offchain_data"] = changes["offchainData"] or {}
    mint_refs = None
    if changes.get("mintAccountOffchainReferences") is not None:
        mint_refs = {k: v for k, v in changes["mintAccountOffchainReferences"].items() if k not in ("alId", "type")}
        if mint_refs.get("name") is not None and instrument.version == TokenVersion.SPL:
            updates["name"] = mint_refs["name"]
    if changes.get("reconcileCirculatingSupply"):
        chain = read_mint(cluster, instrument.address)
        if chain is not None:
            updates["supply_onchain"] = updates["supply_offchain"] = chain.mint.supply
    # Webhook credentials are sealed in the write phase, under the master key current then
    # (docs/custody.md): never sealed here and stored later under a key retired meanwhile.
    hooks = (changes["postTransactionSubmitWebhooks"] or []) if "postTransactionSubmitWebhooks" in changes else None

    prepared = None
    if ixs:
        _in_flight_check(instrument, f"{p}.mintAccount")
        prepared = transaction_build(context=ctx, operation=operations.UPDATE, instructions=ixs, signers=list(signers.values()), config=config)
    tx = None
    with write_phase(on_abort=prepared.release if prepared else None):
        instrument = _locked_again(read, f"{p}.mintAccount") if prepared else lock_instrument(read.pk, tenant=tenant)
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        if mint_refs is not None:
            account_update(ctx, account=instrument.mint_account, changes={"offchainReferences": mint_refs})
        if hooks is not None:
            updates["post_transaction_submit_webhooks"] = webhooks.sealed(hooks)
            webhooks.subscriptions_sync(instrument, hooks)  # before the record: the update's own events reach them
        for column, value in updates.items():
            setattr(instrument, column, value)
        if updates:
            instrument.save(update_fields=[*updates, "updated_at"])
        if prepared is not None:
            tx = _record(instrument, prepared, api_key=ctx.api_key, request_id=ctx.request_id, funded=funded)
    return InstrumentResult(instrument, tx)


def instrument_set_paused(ctx: OperationContext, *, instrument: FinancialInstrument, paused: bool, authority_lookup: dict | None = None, requested_by: str | None = None) -> InstrumentResult:
    """Pause / Unpause Financial Instrument: while paused, the Token-2022 program refuses
    transfers, mints and burns of the mint. One pause or unpause in flight at a time
    (409 OPERATION_IN_PROGRESS), re-checked under the row lock in the write phase.
    ``requested_by``: the staff user of an admin action (no API key), recorded on the
    transaction."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    field = f"{p}.financialInstrument"

    def check(record: FinancialInstrument) -> None:
        _usable_instrument(record, field)
        _require_extension(record, "PAUSABLE", field)
        if record.paused == paused:
            raise LedgerError(f"The financial instrument is already {'paused' if paused else 'unpaused'}.", field=field, code="ALREADY_PAUSED" if paused else "NOT_PAUSED")
        _in_flight_check(record, field)

    instrument = FinancialInstrument.objects.for_tenant(tenant).get(pk=instrument.pk)
    check(instrument)
    given = _authority(tenant, cluster, authority_lookup, f"{p}.pausableAuthority")
    current = _current(instrument, "pausable", given, f"{p}.pausableAuthority")
    mint = Pubkey.from_string(instrument.address)
    ix = t22.pause(mint=mint, authority=current.pubkey) if paused else t22.resume(mint=mint, authority=current.pubkey)
    prepared = transaction_build(context=ctx, operation=operations.PAUSE if paused else operations.UNPAUSE, instructions=[ix],
                                 signers=[_signer(current, tenant, f"{p}.pausableAuthority")], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        locked = lock_instrument(instrument.pk, tenant=tenant)
        check(locked)
        tx = _record(locked, prepared, api_key=ctx.api_key, request_id=ctx.request_id)
        if requested_by:
            TransactionEvent.objects.create(transaction=tx, kind="REQUESTED_IN_ADMIN", detail={"user": requested_by})
    return InstrumentResult(locked, tx)


def instrument_close(ctx: OperationContext, *, instrument: FinancialInstrument, refund_lookup: dict | None, authority_lookup: dict | None) -> InstrumentResult:
    """Close Financial Instrument (spec: States): only with a close authority and a
    circulating supply of 0. Managed: the mint closes on the network, rent to
    refundDestination. Onboarded (alreadyOnchain): closed in the service only."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    field = f"{p}.financialInstrumentToClose"
    instrument = FinancialInstrument.objects.for_tenant(tenant).get(pk=instrument.pk)
    _usable_instrument(instrument, field)
    _in_flight_check(instrument, field)
    chain = read_mint(cluster, instrument.address)
    if chain is None:
        raise LedgerError("The mint is not on the network.", field=field, code="MINT_NOT_ONCHAIN")
    close_authority = chain_fields(chain)["addresses"]["closing"]
    if not close_authority:
        raise LedgerError("The mint has no close authority (Token-2022 MINT_CLOSE_AUTHORITY); it cannot be closed.", field=field, code="NOT_CLOSABLE")
    if chain.mint.supply != 0:
        raise LedgerError(f"The circulating supply is {chain.mint.supply}; a financial instrument can be closed only at 0 (burn it first).", field=field, code="SUPPLY_NOT_ZERO")
    given = _authority(tenant, cluster, authority_lookup, f"{p}.closeAuthority")
    if given is not None and given.address != close_authority:
        raise LedgerError(f"The mint's close authority is {close_authority}.", field=f"{p}.closeAuthority", code="AUTHORITY_MISMATCH")
    if not instrument.managed:
        with write_phase():
            locked = _locked_again(instrument, field)
            locked.status = InstrumentStatus.CLOSED
            locked.save(update_fields=["status", "updated_at"])
        return InstrumentResult(locked, None)
    if not refund_lookup:
        raise LedgerError("Closing returns the mint's rent to refundDestination: name it.", field=f"{p}.refundDestination", code="REFUND_DESTINATION_REQUIRED")
    refund = _authority(tenant, cluster, refund_lookup, f"{p}.refundDestination")
    if refund.account is not None and refund.account.status == AccountStatus.INACTIVE:
        raise LedgerError("The refund destination is inactive.", field=f"{p}.refundDestination", code="ACCOUNT_INACTIVE")
    authority = given or Authority(close_authority, Account.objects.for_tenant(tenant).filter(cluster=cluster, address=close_authority).first())
    ix = t22.close_account(account=Pubkey.from_string(instrument.address), destination=refund.pubkey, authority=authority.pubkey)
    prepared = transaction_build(context=ctx, operation=operations.CLOSE, instructions=[ix],
                                 signers=[_signer(authority, tenant, f"{p}.closeAuthority")], config=transaction_config(tenant, cluster, ctx.svm_config))
    with write_phase(on_abort=prepared.release):
        locked = _locked_again(instrument, field)
        tx = _record(locked, prepared, api_key=ctx.api_key, request_id=ctx.request_id)
    return InstrumentResult(locked, tx)
