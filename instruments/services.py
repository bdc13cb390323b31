"""Writes of the financial instruments area (docs/instruments.md): Create and onboarding,
and the sync of a record from its mint. Update, Pause / Unpause and Close are
instruments/changes.py."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer

from accounts.locks import lock_account
from accounts.lookup import OffPlatform, resolve_account, resolve_own_account
from accounts.models import Account, AccountStatus
from accounts.services import account_draft, account_save, funding_effects, funding_signer
from accounts.signers import ensure_usable, signer_for, transaction_config
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from chain.errors import TransactionTooLarge
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import alid, operations, webhooks
from .allowlist import chain as allowlist_chain
from .extensions import b64_of, metadata_of, multiplier_of, requested_extensions
from .models import FinancialInstrument, InstrumentStatus, PositionState, TokenVersion, authority_column
from .onchain import PROGRAMS, ChainMint, apply_chain_state, chain_fields, read_mint
from .token2022 import instructions as t22
from .token2022.constants import API_EXTENSIONS, AccountState
from .token2022.sizes import mint_size, mint_space

#: Create/Update body authority fields → role (models.AUTHORITY_ROLES).
AUTHORITY_FIELDS = {
    "mintAuthority": "mint", "updateAuthority": "update", "freezeAuthority": "freeze",
    "permanentDelegateAuthority": "permanentDelegate", "closingAuthority": "closing", "pausableAuthority": "pausable",
    "scaledUiAmountAuthority": "scaledUiAmount", "transferHookAuthority": "transferHook",
    "confidentialTransferAuthority": "confidentialTransfer", "confidentialMintBurnAuthority": "confidentialMintBurn",
}
TOO_LARGE = (
    "The creation transaction exceeds the network's maximum transaction size. Either create the mint account first "
    "(Create Account with dataLength from the Token Extensions Calculator, type ASSET_TOKEN or CURRENCY_TOKEN, "
    "tokenVersion TOKEN_2022) and pass it as itemData.existingMintAccount, or omit onchainData.simpleCustomMetadata "
    "and add it afterwards with Update Financial Instrument."
)
DEFAULT_DECIMALS = 6


@dataclass
class InstrumentResult:
    instrument: FinancialInstrument
    transaction: Transaction | None


@dataclass(frozen=True)
class Authority:
    """A resolved authority lookup: the record when the service knows the address."""

    address: str
    account: Account | None

    @property
    def pubkey(self) -> Pubkey:
        return Pubkey.from_string(self.address)


def _authority(tenant, cluster: str, lookup: dict | None, field: str) -> Authority | None:
    if not lookup:
        return None
    resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
    if isinstance(resolved, OffPlatform):
        return Authority(resolved.address, None)
    ensure_usable(resolved, field=field)
    return Authority(resolved.address, resolved)


def _signer(authority: Authority, tenant, field: str) -> SignerSpec:
    if authority.account is None:
        return SignerSpec(authority.pubkey, None)  # signs off platform (Sign Transaction)
    return signer_for(authority.account, tenant, field=field)


def _hook_program(tenant, cluster: str, lookup: dict | None, field: str) -> Authority | None:
    """transferHookProgram: any address, as long as the network has an executable program there."""
    program = _authority(tenant, cluster, lookup, field)
    if program is not None:
        onchain = rpc_for(cluster).account(program.pubkey)
        if onchain is None or not onchain.executable:
            raise LedgerError("transferHookProgram must be an executable program on the network.", field=field, code="NOT_A_PROGRAM")
    return program


# --- Create -----------------------------------------------------------------------------


def _al_id(data: dict, mint_refs: dict, prefix: str) -> tuple[alid.InstrumentKind, str | None]:
    """The instrument's kind and given alId (None: generate one)."""
    new = (data.get("offchainReferences") or {}).get("newAlId") or mint_refs.get("newAlId") or {}
    given = mint_refs.get("alId")
    kind_new = None
    if new.get("financialInstrumentType"):
        kind_new = alid.kind_for_type(new["financialInstrumentType"], field=f"{prefix}.offchainReferences.newAlId.financialInstrumentType")
    if given:
        kind, _ = alid.parse(given, field=f"{prefix}.mintAccount.offchainReferences.alId")
        if kind_new is not None and kind_new != kind:
            raise LedgerError("newAlId.financialInstrumentType disagrees with the given alId.", field=f"{prefix}.offchainReferences.newAlId.financialInstrumentType", code="CONFLICTING_AL_ID")
        return kind, given
    if kind_new is None:
        raise LedgerError("The instrument has no alId: give mintAccount.offchainReferences.alId or offchainReferences.newAlId.financialInstrumentType.", field=f"{prefix}.offchainReferences.newAlId.financialInstrumentType", code="REQUIRED")
    return kind_new, None


def _check_existing_mint(account: Account, version: str, space: int, field: str) -> int:
    """An existingMintAccount must be an uninitialized account of the right program and size;
    returns its lamports."""
    onchain = rpc_for(account.cluster).account(Pubkey.from_string(account.address))
    if onchain is None:
        raise LedgerError("The existing mint account is not on the network (yet).", field=field, code="ACCOUNT_NOT_ONCHAIN")
    if onchain.owner != PROGRAMS[version]:
        raise LedgerError(f"The existing mint account must be owned by the {version} token program (Create Account with tokenVersion {version}).", field=field, code="INVALID_MINT_ACCOUNT")
    if len(onchain.data) != space:
        raise LedgerError(f"The existing mint account has {len(onchain.data)} bytes; these extensions need {space} (Token Extensions Calculator, without metadata).", field=field, code="INVALID_MINT_ACCOUNT")
    if any(bytes(onchain.data)):
        raise LedgerError("The existing mint account is already initialized.", field=field, code="INVALID_MINT_ACCOUNT")
    return onchain.lamports


def _al_id_free(tenant, cluster: str, al_id: str | None, prefix: str, mint_account: Account | None = None) -> None:
    """Read phase: a given alId is free in the organization — no instrument and no account
    but the instrument's own mint account holds it (409 DUPLICATE_AL_ID)."""
    if not al_id:
        return
    accounts = Account.objects.for_tenant(tenant).filter(cluster=cluster, al_id=al_id)
    if mint_account is not None and mint_account.pk is not None:
        accounts = accounts.exclude(pk=mint_account.pk)
    if FinancialInstrument.objects.for_tenant(tenant).filter(cluster=cluster, al_id=al_id).exists() or accounts.exists():
        raise ConflictError("A financial instrument or account with this alId already exists.", field=f"{prefix}.mintAccount.offchainReferences.alId", code="DUPLICATE_AL_ID")


def _mint_al_id(mint_account: Account, al_id: str, prefix: str, *, tenant, **fields) -> None:
    """Write phase: the mint account takes the instrument's alId. An account that set it
    since the read phase breaks acct_unique_alid: 409, not 500."""
    try:
        with transaction.atomic():
            Account.objects.for_tenant(tenant).filter(pk=mint_account.pk).update(al_id=al_id, **fields)
    except IntegrityError:
        raise ConflictError("An account with this alId was recorded meanwhile.", field=f"{prefix}.mintAccount.offchainReferences.alId", code="DUPLICATE_AL_ID")


def instrument_create(ctx: OperationContext, *, data: dict) -> InstrumentResult:
    """Create Financial Instrument (spec: Financial instruments 1)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    prefix = "itemData"
    if "alreadyOnChain" in data and "alreadyOnchain" in data and data["alreadyOnChain"] != data["alreadyOnchain"]:
        raise LedgerError("alreadyOnchain and alreadyOnChain disagree.", field=f"{prefix}.alreadyOnchain", code="CONFLICTING_FIELDS")
    already = bool(data.get("alreadyOnchain", data.get("alreadyOnChain", False)))
    mint_data = dict(data.get("mintAccount") or {})
    mint_refs = mint_data.get("offchainReferences") or {}
    kind, given_al_id = _al_id(data, mint_refs, prefix)
    reference_type = alid.check_reference_type(kind, mint_refs.get("type"), field=f"{prefix}.mintAccount.offchainReferences.type")
    if given_al_id and FinancialInstrument.objects.for_tenant(tenant).filter(cluster=cluster, al_id=given_al_id).exists():
        raise ConflictError("A financial instrument with this alId already exists.", field=f"{prefix}.mintAccount.offchainReferences.alId", code="DUPLICATE_AL_ID")
    if data.get("mintAccount") and data.get("existingMintAccount"):
        raise LedgerError("Give mintAccount (a new account) or existingMintAccount, not both.", field=f"{prefix}.existingMintAccount", code="CONFLICTING_FIELDS")
    if already:
        return _onboard(ctx, data=data, mint_data=mint_data, kind=kind, al_id=given_al_id, reference_type=reference_type, prefix=prefix)

    version = data.get("version") or TokenVersion.TOKEN_2022
    hooks = data.get("postTransactionSubmitWebhooks") or []
    extensions = requested_extensions(data, version, prefix)
    types = {API_EXTENSIONS[e] for e in extensions}
    onchain_data = data.get("onchainData") or {}
    metadata = metadata_of(onchain_data) if "TOKEN_METADATA" in extensions else None
    decimals = onchain_data.get("decimals", DEFAULT_DECIMALS)
    default_state = data.get("defaultPositionState")

    auth = {role: _authority(tenant, cluster, data.get(name), f"{prefix}.{name}") for name, role in AUTHORITY_FIELDS.items()}
    if auth["mint"] is None:
        raise LedgerError("A new mint needs its mintAuthority.", field=f"{prefix}.mintAuthority", code="REQUIRED")
    if auth["update"] is None and metadata is not None:
        auth["update"] = auth["mint"]  # the metadata's update authority defaults to the mint authority
    if default_state == PositionState.FROZEN and auth["freeze"] is None:
        raise LedgerError("Positions can start FROZEN only with a freezeAuthority (it unfreezes them).", field=f"{prefix}.defaultPositionState", code="REQUIRES_FREEZE_AUTHORITY")
    hook_program = _hook_program(tenant, cluster, data.get("transferHookProgram"), f"{prefix}.transferHookProgram")
    multiplier = multiplier_of(data["scaledUiAmountMultiplier"], f"{prefix}.scaledUiAmountMultiplier") if data.get("scaledUiAmountMultiplier") is not None else 1.0
    confidential = data.get("confidentialTransfer") or {}
    mint_burn = data.get("confidentialMintBurn") or {}
    if "CONFIDENTIAL_MINT_BURN" in extensions:
        supply_key = b64_of(mint_burn.get("supplyElgamalPubkey") or "", 32, f"{prefix}.confidentialMintBurn.supplyElgamalPubkey")
        decryptable = b64_of(mint_burn.get("decryptableSupply") or "", 36, f"{prefix}.confidentialMintBurn.decryptableSupply")
    auditor = b64_of(confidential["auditorElgamalPubkey"], 32, f"{prefix}.confidentialTransfer.auditorElgamalPubkey") if confidential.get("auditorElgamalPubkey") else None

    space, size = mint_space(types), mint_size(types, metadata)  # created with the fixed part, funded for all
    rent = rpc_for(cluster).minimum_balance_for_rent_exemption(size)
    allow_list = allowlist_chain.create_plan(tenant, cluster, data, hook_program.address if hook_program else None, auth, prefix, resolve=_authority)
    existing = None
    if data.get("existingMintAccount"):
        field = f"{prefix}.existingMintAccount"
        existing = resolve_own_account(tenant, cluster, data["existingMintAccount"], field=field)
        ensure_usable(existing, field=field)
        if existing.type != reference_type:
            raise LedgerError(f"The existing mint account's type is {existing.type}; this instrument's mint is {reference_type}.", field=field, code="INVALID_ACCOUNT_TYPE")
        if FinancialInstrument.objects.for_tenant(tenant).filter(mint_account=existing).exists():
            raise ConflictError("This mint account already belongs to a financial instrument.", field=field, code="DUPLICATE_MINT")
        lamports = _check_existing_mint(existing, version, space, field)
        mint_account = existing
    else:
        if mint_data.get("dataLength") or mint_data.get("seed"):
            raise LedgerError("A mint's size and rent follow from its extensions; omit dataLength and seed.", field=f"{prefix}.mintAccount.dataLength", code="INVALID")
        if mint_data.get("managed") is False:
            raise LedgerError("A new mint account is created by the service and signs its creation: it must be managed.", field=f"{prefix}.mintAccount.managed", code="INVALID")
        mint_account = account_draft(tenant=tenant, cluster=cluster, api_key=ctx.api_key, data={**mint_data, "offchainReferences": {**mint_refs, "type": reference_type, "alId": None}},
                                     prefix=f"{prefix}.mintAccount", allowed_types={reference_type})
        lamports = None
    _al_id_free(tenant, cluster, given_al_id, prefix, mint_account=existing)
    mint = Pubkey.from_string(mint_account.address)
    program = PROGRAMS[version]

    config = transaction_config(tenant, cluster, ctx.svm_config)
    ixs = []
    signers: list[SignerSpec] = []
    funding_needed = rent if existing is None else max(rent - lamports, 0)
    funding = None
    if funding_needed or allow_list:
        # The mint's rent (and the allow-list's) comes from an account of the tenant, never the platform fee payer.
        funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=funding_needed + (allow_list.rent if allow_list else 0), destination_type="MANAGED")
        signers.append(funding.signer)
    if existing is None:
        ixs.append(create_account(CreateAccountParams(from_pubkey=funding.pubkey, to_pubkey=mint, lamports=rent, space=space, owner=program)))
        signers.append(SignerSpec(mint, mint_account.managed_key))
    elif funding_needed:
        ixs.append(transfer(TransferParams(from_pubkey=funding.pubkey, to_pubkey=mint, lamports=funding_needed)))

    def key(role):
        return auth[role].pubkey if auth[role] is not None else None

    for extension in extensions:  # every extension is initialized before the mint itself
        if extension == "METADATA_POINTER":
            ixs.append(t22.initialize_metadata_pointer(mint=mint, authority=key("update"), metadata_address=mint))
        elif extension == "MINT_CLOSE_AUTHORITY":
            ixs.append(t22.initialize_mint_close_authority(mint=mint, close_authority=key("closing")))
        elif extension == "PERMANENT_DELEGATE":
            ixs.append(t22.initialize_permanent_delegate(mint=mint, delegate=key("permanentDelegate")))
        elif extension == "DEFAULT_ACCOUNT_STATE":
            ixs.append(t22.initialize_default_account_state(mint=mint, state=AccountState.FROZEN if default_state == PositionState.FROZEN else AccountState.INITIALIZED))
        elif extension == "PAUSABLE":
            ixs.append(t22.initialize_pausable(mint=mint, authority=key("pausable")))
        elif extension == "SCALED_UI_AMOUNT":
            ixs.append(t22.initialize_scaled_ui_amount(mint=mint, authority=key("scaledUiAmount"), multiplier=multiplier))
        elif extension == "TRANSFER_HOOK":
            ixs.append(t22.initialize_transfer_hook(mint=mint, authority=key("transferHook"), program_id=hook_program.pubkey if hook_program else None))
        elif extension == "CONFIDENTIAL_TRANSFER":
            ixs.append(t22.initialize_confidential_transfer_mint(mint=mint, authority=key("confidentialTransfer"), auto_approve_new_accounts=bool(confidential.get("autoApproveNewPositions", False)), auditor_elgamal_pubkey=auditor))
        elif extension == "CONFIDENTIAL_MINT_BURN":
            ixs.append(t22.initialize_confidential_mint_burn(mint=mint, supply_elgamal_pubkey=supply_key, decryptable_supply=decryptable))
    ixs.append(t22.initialize_mint2(mint=mint, decimals=decimals, mint_authority=key("mint"), freeze_authority=key("freeze"), program=program))
    if metadata is not None:
        ixs.append(t22.initialize_token_metadata(mint=mint, update_authority=key("update"), mint_authority=key("mint"), name=metadata["name"], symbol=metadata["symbol"], uri=metadata["uri"]))
        signers.append(_signer(auth["mint"], tenant, f"{prefix}.mintAuthority"))
        if metadata["additional"]:
            signers.append(_signer(auth["update"], tenant, f"{prefix}.updateAuthority"))
        ixs += [t22.update_token_metadata_field(mint=mint, update_authority=key("update"), field=k, value=v) for k, v in metadata["additional"].items()]
    if allow_list:  # the hook's accounts, once the mint is initialized (the program checks it and its mint authority)
        ixs.append(allow_list.instruction(payer=funding.pubkey, mint=mint, mint_authority=key("mint")))
        signers.append(_signer(auth["mint"], tenant, f"{prefix}.mintAuthority"))

    instrument = FinancialInstrument(
        tenant=tenant, cluster=cluster, mint_account=mint_account, address=mint_account.address, version=version,
        status=InstrumentStatus.PENDING, managed=True, was_onchain_already=False,
        shared_across_tenants=bool(mint_data.get("shareAcrossTenants", False)), al_id=given_al_id or "", al_category=kind.category, al_type=kind.instrument_type,
        name=onchain_data.get("name") or mint_refs.get("name") or "", symbol=onchain_data.get("symbol") or "", uri=onchain_data.get("uri") or "",
        decimals=decimals, onchain_metadata=(metadata or {}).get("additional") or {}, offchain_data=data.get("offchainData") or {},
        extensions=extensions, default_position_state=default_state or PositionState.INITIALIZED,
        paused=False if "PAUSABLE" in extensions else None,
        scaled_ui_multiplier=multiplier if "SCALED_UI_AMOUNT" in extensions else None,
        transfer_hook_program=hook_program.account if hook_program else None, transfer_hook_program_address=hook_program.address if hook_program else "",
        data_length=size, comments=mint_data.get("comments") or "",
    )
    for role, authority in auth.items():
        if authority is not None:
            setattr(instrument, authority_column(role), authority.account)
            setattr(instrument, f"{authority_column(role)}_address", authority.address)
    try:
        prepared = transaction_build(context=ctx, operation=operations.CREATE, instructions=ixs, signers=signers, config=config)
    except TransactionTooLarge as exc:
        raise LedgerError(f"{TOO_LARGE} ({exc})", field=prefix, code="TRANSACTION_TOO_LARGE") from exc

    with write_phase(on_abort=prepared.release):
        if existing is not None:
            existing = lock_account(existing.pk, tenant=tenant)
            if FinancialInstrument.objects.for_tenant(tenant).filter(mint_account=existing).exists():
                raise ConflictError("This mint account already belongs to a financial instrument.", field=f"{prefix}.existingMintAccount", code="DUPLICATE_MINT")
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)  # the funder's limits, under its row lock
        if existing is None:
            account_save(mint_account, prefix=f"{prefix}.mintAccount")
            instrument.mint_account = mint_account
        # The alId sequence row is the hot lock: taken last, held only until this commit.
        instrument.al_id = alid.next_al_id(kind, tenant=tenant, cluster=cluster, given=given_al_id)
        instrument.post_transaction_submit_webhooks = webhooks.sealed(hooks)
        try:
            with transaction.atomic():
                instrument.save()
        except IntegrityError:
            raise ConflictError("This mint or alId is already recorded.", field=f"{prefix}.mintAccount", code="DUPLICATE_INSTRUMENT")
        if hooks:
            webhooks.subscriptions_sync(instrument, hooks)  # before the record: the creation's own events reach them
        tx = transaction_record(prepared, effects_data={"instrument": str(instrument.offchain_id), **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
        FinancialInstrument.objects.for_tenant(tenant).filter(pk=instrument.pk).update(creation_transaction=tx, last_transaction=tx, pending_transaction=tx)
        # A new mint account is created by this transaction; an existing one only gets the alId.
        created = {"status": AccountStatus.PENDING, "creation_transaction": tx, "last_transaction": tx} if existing is None else {}
        _mint_al_id(mint_account, instrument.al_id, prefix, tenant=tenant, **created)
    instrument.creation_transaction = instrument.last_transaction = instrument.pending_transaction = tx
    return InstrumentResult(instrument, tx)


def _onboard(ctx: OperationContext, *, data, mint_data, kind, al_id, reference_type, prefix) -> InstrumentResult:
    """alreadyOnchain: record a mint that exists, as the chain describes it; no transaction."""
    tenant, cluster = ctx.tenant, ctx.cluster
    address = mint_data.get("onchainId")
    existing = None
    if data.get("existingMintAccount"):
        existing = resolve_own_account(tenant, cluster, data["existingMintAccount"], field=f"{prefix}.existingMintAccount")
        address = existing.address
    if not address:
        raise LedgerError("Onboarding needs the mint's address: mintAccount.onchainId (or existingMintAccount).", field=f"{prefix}.mintAccount.onchainId", code="REQUIRED")
    chain = read_mint(cluster, address)
    if chain is None:
        raise LedgerError("No initialized mint of either token program at this address.", field=f"{prefix}.mintAccount.onchainId", code="MINT_NOT_ONCHAIN")
    if data.get("version") and data["version"] != chain.version:
        raise LedgerError(f"The mint on the network is {chain.version}.", field=f"{prefix}.version", code="VERSION_MISMATCH")
    if FinancialInstrument.objects.for_tenant(tenant).filter(cluster=cluster, address=address).exists():
        raise ConflictError("This mint is already recorded as a financial instrument.", field=f"{prefix}.mintAccount.onchainId", code="DUPLICATE_MINT")
    if existing is None:
        existing = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=address).first()
    _al_id_free(tenant, cluster, al_id, prefix, mint_account=existing)
    if existing is None:
        # Onboarded mints are not managed unless their key is imported with them.
        imported = bool((mint_data.get("privateKeyDetails") or {}).get("privateKey"))
        account_data = {**mint_data, "managed": imported and mint_data.get("managed", True), "alreadyOnchain": True, "onchainId": address,
                        "offchainReferences": {**(mint_data.get("offchainReferences") or {}), "type": reference_type, "alId": None}}
        existing = account_draft(tenant=tenant, cluster=cluster, api_key=ctx.api_key, data=account_data, prefix=f"{prefix}.mintAccount", allowed_types={reference_type})
    elif existing.type != reference_type:
        raise LedgerError(f"The recorded mint account's type is {existing.type}; this instrument's mint is {reference_type}.", field=f"{prefix}.mintAccount", code="INVALID_ACCOUNT_TYPE")
    addresses = chain_fields(chain)["addresses"]
    for name, role in AUTHORITY_FIELDS.items():
        given = _authority(tenant, cluster, data.get(name), f"{prefix}.{name}")
        onchain = addresses.get(role)
        if given is not None and role != "confidentialMintBurn" and given.address != onchain:
            raise LedgerError(f"The mint's {name} on the network is {onchain or 'none'}.", field=f"{prefix}.{name}", code="AUTHORITY_MISMATCH")
    onchain_data = data.get("onchainData") or {}
    instrument = FinancialInstrument(
        tenant=tenant, cluster=cluster, mint_account=existing, address=address, version=chain.version,
        status=InstrumentStatus.ACTIVE, managed=False, was_onchain_already=True,
        shared_across_tenants=bool(mint_data.get("shareAcrossTenants", False)), al_id=al_id or "", al_category=kind.category, al_type=kind.instrument_type,
        name=onchain_data.get("name") or "", symbol=onchain_data.get("symbol") or "", offchain_data=data.get("offchainData") or {},
        comments=mint_data.get("comments") or "",
    )
    apply_chain_state(instrument, chain)
    instrument.supply_offchain = instrument.supply_onchain  # onboarding starts from the chain's figure
    with write_phase():
        if existing.pk is None:
            account_save(existing, prefix=f"{prefix}.mintAccount")
            instrument.mint_account = existing
        instrument.al_id = alid.next_al_id(kind, tenant=tenant, cluster=cluster, given=al_id)  # hot lock last
        hooks = data.get("postTransactionSubmitWebhooks") or []
        instrument.post_transaction_submit_webhooks = webhooks.sealed(hooks)
        try:
            with transaction.atomic():
                instrument.save()
        except IntegrityError:
            raise ConflictError("This mint or alId is already recorded.", field=f"{prefix}.mintAccount", code="DUPLICATE_INSTRUMENT")
        if hooks:
            webhooks.subscriptions_sync(instrument, hooks)
        _mint_al_id(existing, instrument.al_id, prefix, tenant=tenant)
    return InstrumentResult(instrument, None)


# --- Sync (workers) ----------------------------------------------------------------------


def instrument_sync(*, instrument: FinancialInstrument, tx: Transaction | None = None, mint: ChainMint | None = None) -> FinancialInstrument:
    """Copy the mint as the chain has it onto the record.

    ``mint``: the mint as already read — the confirmation effects pass what the prefetch
    read (no network inside their database transaction); without it the chain is read now
    (admin and API callers, outside any database transaction). A read older than the one
    the record already reflects (``synced_slot``) changes nothing.
    """
    chain = mint if mint is not None else read_mint(instrument.cluster, instrument.address)
    if chain is None:
        return instrument
    if chain.slot is not None and instrument.synced_slot is not None and chain.slot < instrument.synced_slot:
        return instrument  # another worker already copied a later state
    fields = apply_chain_state(instrument, chain)
    if tx is not None:
        instrument.last_transaction = tx
        instrument.last_transaction_at = tx.confirmed_at or timezone.now()
        fields += ["last_transaction", "last_transaction_at"]
    instrument.save(update_fields=fields + ["updated_at"])
    return instrument
