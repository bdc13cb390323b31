"""Writes of the accounts area (docs/accounts.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer

from custody import services as custody
from custody.errors import ManagedKeyExists
from custody.models import KeyLocation
from ledger_project.api.errors import ConflictError, LedgerError, NotFoundError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from tenancy.permissions import require_role
from tenancy.roles import Role
from chain.rpc import is_localnet, rpc_for
from transactions.models import Transaction, TransactionEvent
from transactions.platform_keys import refuse_platform_address
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import operations
from .limits import network_debit_check, normalize
from .locks import ensure_no_operation_in_flight, lock_account, lock_visible_account
from .lookup import OffPlatform, resolve_account
from .models import Account, AccountStatus, AccountType, PrivateKeyDisclosure, SPECIALIZED_TYPES, ThresholdKey, WALLET_TYPES
from .signers import ensure_usable, signer_for, transaction_config

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
TOKEN_PROGRAMS = {"SPL": Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"), "TOKEN_2022": Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")}
MINT_TYPES = {AccountType.FUNDS_TOKEN, AccountType.ASSET_TOKEN, AccountType.CURRENCY_TOKEN}
_SPECIALIZED_ENDPOINT = {
    AccountType.FUNDS_TOKEN_ACCOUNT: "Initialize Position",
    AccountType.ASSET_TOKEN_ACCOUNT: "Initialize Position",
    AccountType.ADDRESS_LOOKUP_TABLE: "Create Address Lookup Table",
    AccountType.NONCE: "Create Durable Nonce Accounts",
}


@dataclass
class AccountResult:
    account: Account
    transaction: Transaction | None


def _check_debit_settings(api_key, data: dict, account_type: str, prefix: str) -> None:
    for name in ("networkCurrencyDebitApiKeys", "tokenDebitApiKeys"):
        if data.get(name) is not None:
            require_role(api_key, Role.PLATFORM_UPDATE_DEBIT_API_KEYS, field=f"{prefix}.{name}", why=f"set {name}")
    for name in ("networkCurrencyDebitLimits", "tokenDebitLimits"):
        if data.get(name) is not None and account_type not in WALLET_TYPES:
            raise LedgerError(f"{name} apply only to WALLET, ASSETS_WALLET, CURRENCIES_WALLET and DEFI_SETTLEMENT_WALLET accounts.", field=f"{prefix}.{name}", code="LIMITS_NOT_APPLICABLE")


def _conflicts(tenant, cluster: str, address: str, refs: dict, exclude_pk=None, prefix: str = "itemData") -> None:
    queryset = Account.objects.for_tenant(tenant).filter(cluster=cluster)
    if exclude_pk:
        queryset = queryset.exclude(pk=exclude_pk)
    if address and queryset.filter(address=address).exists():
        raise ConflictError("An account with this onchainId is already recorded.", field=f"{prefix}.onchainId", code="DUPLICATE_ACCOUNT")
    for key, column in (("code", "code"), ("alId", "al_id")):
        if refs.get(key) and queryset.filter(**{column: refs[key]}).exists():
            raise ConflictError(f"An account with this {key} already exists.", field=f"{prefix}.offchainReferences.{key}", code="DUPLICATE_REFERENCE")
    if refs.get("accountNumber") and queryset.filter(account_number=refs["accountNumber"], organization_external_id=refs.get("organizationExternalId") or "").exists():
        raise ConflictError("An account with this accountNumber already exists.", field=f"{prefix}.offchainReferences.accountNumber", code="DUPLICATE_REFERENCE")


def _duplicate_key(exc: ManagedKeyExists, tenant, prefix: str) -> ManagedKeyExists:
    """409 DUPLICATE_KEY naming the holder only when it is the caller's own account
    (docs/custody.md, Imports): the same answer whether the duplicate is seen before
    sealing or, for an import committing concurrently, by the unique column."""
    holder = Account.objects.for_tenant(tenant).filter(managed_key__public_key=exc.public_key).first() if tenant is not None else None
    if holder is not None:
        exc.message = (f"The private key of {exc.public_key} is already held by account offchainId {holder.offchain_id} "
                       f"(onchainId {holder.address}, svmCluster {holder.cluster}).")
    exc.field = f"{prefix}.privateKeyDetails.privateKey"
    return exc


def _managed_key(data: dict, prefix: str, tenant=None):
    """The account's key, in memory only: generated or imported now (the network phase signs
    with it), sealed and stored by ``account_save`` in the write phase."""
    details = data.get("privateKeyDetails") or {}
    locations = details.get("location") or [KeyLocation.DATABASE]
    location = locations[0]
    expected = details.get("publickKey") or data.get("onchainId")
    if details.get("privateKey"):
        try:
            return custody.managed_key_import(secret=details["privateKey"], location=location, expected_public_key=expected, save=False)
        except ManagedKeyExists as exc:
            raise _duplicate_key(exc, tenant, prefix)
        except LedgerError as exc:
            exc.field = f"{prefix}.privateKeyDetails.privateKey"
            raise
    if expected:
        raise LedgerError("A managed account with a given onchainId needs its privateKey (or omit onchainId to have a key generated).", field=f"{prefix}.privateKeyDetails.privateKey", code="REQUIRED")
    return custody.managed_key_generate(location=location, save=False)


def account_draft(*, tenant, cluster: str, api_key, data: dict, prefix: str = "itemData", default_type: str = AccountType.WALLET, allowed_types=None,
                  threshold_address: str | None = None) -> Account:
    """Validate a New account definition into an unsaved record (read and network phase:
    writes nothing): the key is generated or imported in memory, onboarding checks the
    network. ``account_save`` stores both in the write phase. Shared by Create Account and
    the areas whose records are accounts too (a financial instrument's mint).

    ``privateKeyDetails.dkgKeys`` (a threshold key, accounts/mpc/keygen.py) only with
    ``threshold_address``: the group key's address once key generation made it ("" to
    check the other rules before); elsewhere 400 NOT_SUPPORTED. Nobody holds such an
    account's private key, so it is recorded ``managed`` false, without a key location."""
    threshold = bool((data.get("privateKeyDetails") or {}).get("dkgKeys"))
    if threshold and threshold_address is None:
        raise LedgerError("A threshold key (dkgKeys) is made by Create Account only; this account cannot have one.", field=f"{prefix}.privateKeyDetails.dkgKeys", code="NOT_SUPPORTED")
    refs = data.get("offchainReferences") or {}
    account_type = refs.get("type") or default_type
    if allowed_types is not None and account_type not in allowed_types:
        raise LedgerError(f"type must be one of {', '.join(sorted(allowed_types))} here.", field=f"{prefix}.offchainReferences.type", code="INVALID_ACCOUNT_TYPE")
    if account_type in SPECIALIZED_TYPES:
        raise LedgerError(f"{account_type} accounts are created with {_SPECIALIZED_ENDPOINT[account_type]}.", field=f"{prefix}.offchainReferences.type", code="USE_SPECIALIZED_ENDPOINT")
    _check_debit_settings(api_key, data, account_type, prefix)
    managed = data.get("managed", True) and not threshold
    already = data.get("alreadyOnchain", False)
    seed = data.get("seed")
    data_length = data.get("dataLength") or 0
    if not managed and not threshold and not data.get("onchainId"):
        raise LedgerError("A not-managed account needs its onchainId.", field=f"{prefix}.onchainId", code="REQUIRED")
    if not managed and (data.get("privateKeyDetails") or {}).get("privateKey"):
        raise LedgerError("A not-managed account cannot carry a private key; set managed true to import it.", field=f"{prefix}.privateKeyDetails.privateKey", code="INVALID")
    if already and (seed is not None or data_length):  # one rule: any given seed, 0 included
        raise LedgerError("seed and dataLength describe a new onchain account; they do not apply with alreadyOnchain.", field=f"{prefix}.seed" if seed is not None else f"{prefix}.dataLength", code="INVALID")
    if data_length and not managed:
        raise LedgerError("Space can be allocated only for a managed account (its key signs the creation).", field=f"{prefix}.dataLength", code="INVALID")
    if data.get("tokenVersion") and account_type not in MINT_TYPES:
        raise LedgerError("tokenVersion applies to mint accounts (FUNDS_TOKEN, ASSET_TOKEN, CURRENCY_TOKEN).", field=f"{prefix}.tokenVersion", code="INVALID")

    address_hint = threshold_address if threshold else data.get("onchainId") or (data.get("privateKeyDetails") or {}).get("publickKey") or ""
    _conflicts(tenant, cluster, address_hint, refs, prefix=prefix)
    if address_hint:
        # A key the platform holds for itself (its fee payer, its nonce pool, its program
        # authorities) is never an organization's account, managed or not (docs/custody.md).
        refuse_platform_address(address_hint, field=f"{prefix}.onchainId" if data.get("onchainId") else f"{prefix}.privateKeyDetails.publickKey")
    key = _managed_key(data, prefix, tenant) if managed else None
    address = key.public_key if key else threshold_address if threshold else data["onchainId"]
    if key is not None and (data.get("privateKeyDetails") or {}).get("privateKey"):
        # An imported key's address may be recorded already; a generated one is new (and
        # the unique column would still refuse it).
        _conflicts(tenant, cluster, address, {}, prefix=prefix)

    onchain = None
    if already and not data.get("skipBlockchainExistenceVerification"):
        onchain = rpc_for(cluster).account(Pubkey.from_string(address))
        if onchain is None:
            raise NotFoundError("No such account on the network; create it instead, or set skipBlockchainExistenceVerification.", field=f"{prefix}.onchainId", code="ACCOUNT_NOT_ONCHAIN")

    account = Account(
        tenant=tenant, cluster=cluster, address=address, managed=managed, managed_key=key, type=account_type,
        status=AccountStatus.ACTIVE, code=refs.get("code") or "", al_id=refs.get("alId") or "",
        organization_external_id=refs.get("organizationExternalId") or "", account_number=refs.get("accountNumber") or "",
        name=refs.get("name") or "", comments=data.get("comments") or "", domain=data.get("domain") or "",
        is_genesis=data.get("isGenesis", False), subscribe_to_network_events=data.get("subscribeToNetworkEvents", False),
        shared_across_tenants=data.get("shareAcrossTenants", False), was_onchain_already=already,
        private_key_location=[key.location] if key else [], orgs_allowed_to_sign=data.get("orgsAllowedToSignWithPrivateKey") or [],
        network_currency_debit_api_keys=data.get("networkCurrencyDebitApiKeys") or [], token_debit_api_keys=data.get("tokenDebitApiKeys") or [],
        network_currency_debit_limits=normalize(data["networkCurrencyDebitLimits"]) if data.get("networkCurrencyDebitLimits") is not None else None,
        token_debit_limits=normalize(data["tokenDebitLimits"]) if data.get("tokenDebitLimits") is not None else None,
        data_length=data_length, lamports_balance=onchain.lamports if onchain else 0, can_pay_fees=managed,
    )
    return account


#: Called in the write phase of every account write that sets an alId, before the row is
#: saved: ``hook(tenant=, cluster=, al_id=)``. The instruments area registers the lock of
#: its alId sequence (instruments/apps.py), so an alId generated concurrently never
#: collides; accounts cannot import an area (docs/style.md, "Apps depend downward").
_AL_ID_WRITE_HOOKS: list[Callable[..., None]] = []


def register_al_id_write_hook(hook: Callable[..., None]) -> None:
    if hook not in _AL_ID_WRITE_HOOKS:
        _AL_ID_WRITE_HOOKS.append(hook)


def _al_id_written(account: Account) -> None:
    if account.al_id:
        for hook in _AL_ID_WRITE_HOOKS:
            hook(tenant=account.tenant, cluster=account.cluster, al_id=account.al_id)


def account_save(account: Account, *, prefix: str = "itemData") -> Account:
    """Store a drafted account and its key (write phase): the key is sealed now, under the
    master key current now. The unique constraints re-check what a concurrent request may
    have taken since the draft: 409 DUPLICATE_KEY (the key) or DUPLICATE_ACCOUNT."""
    if not transaction.get_connection().in_atomic_block:  # the key and the account together, or neither
        with transaction.atomic():
            return account_save(account, prefix=prefix)
    _al_id_written(account)
    if account.managed_key is not None and account.managed_key.pk is None:
        try:
            account.managed_key = custody.managed_key_store(account.managed_key)  # its own savepoint
        except ManagedKeyExists as exc:
            raise _duplicate_key(exc, account.tenant, prefix)
    try:
        # No savepoint (two statements less): the 409 ends the caller's write phase, whose
        # savepoint or transaction rolls back, the key row with it.
        with transaction.atomic(savepoint=False):
            account.save()
    except IntegrityError:
        raise ConflictError("An account with this onchainId or reference already exists.", field=f"{prefix}.onchainId", code="DUPLICATE_ACCOUNT")
    return account


FEE_PAYER_FIELD = "svmTransactionConfig.feePayer"


@dataclass(frozen=True)
class Funding:
    """Who pays value a request moves to an account (``funding_signer``), and how much."""

    signer: SignerSpec
    funder: Account | None  # None: the localnet airdrop funder
    lamports: int
    destination_type: str

    @property
    def pubkey(self) -> Pubkey:
        return self.signer.pubkey


def funding_signer(*, tenant, cluster: str, api_key, svm_config: dict | None, lamports: int, destination_type: str) -> Funding:
    """Who pays value (a seed, rent, a rent top-up) that a request moves to an account —
    never the platform fee payer, which pays network fees only (docs/accounts.md, "Who pays"):

    - ``svmTransactionConfig.feePayer``: an account the tenant may debit (its
      networkCurrencyDebitApiKeys and networkCurrencyDebitLimits apply);
    - else, on CHAIN_LOCALNET with LEDGER_LOCALNET_AIRDROP_FUNDING, a throwaway key funded
      by airdrop with exactly the amount (network phase);
    - else 400 FUNDING_ACCOUNT_REQUIRED.

    Read and network phase; its write phase calls ``funding_effects``.
    """
    field = FEE_PAYER_FIELD
    lookup = (svm_config or {}).get("feePayer")
    if lookup:
        funder = resolve_account(tenant, cluster, lookup, field=field)
        network_debit_check(funder, api_key=api_key, lamports=lamports, destination_type=destination_type, field=field)
        return Funding(signer_for(funder, tenant, field=field), funder, lamports, destination_type)
    if is_localnet(cluster) and settings.LEDGER_LOCALNET_AIRDROP_FUNDING:
        keypair = Keypair()
        rpc = rpc_for(cluster)
        signature = rpc.airdrop(keypair.pubkey(), lamports)
        for _ in range(200 if signature is not None else 0):  # None: processed already
            status = rpc.signature_statuses([signature])[0]
            if status is not None:
                break
            time.sleep(0.05)
        return Funding(SignerSpec(keypair.pubkey(), keypair=keypair), None, lamports, destination_type)
    raise LedgerError(
        "The platform fee payer pays network fees only: name the account that funds the seed or rent in svmTransactionConfig.feePayer.",
        field=field, code="FUNDING_ACCOUNT_REQUIRED",
    )


def funding_effects(funding: Funding | None, *, tenant, api_key) -> dict:
    """Write phase of every request that funds an account (``funding_signer``), before
    ``transaction_record``: re-check the funder's debit keys and limits under its row lock
    (two concurrent fundings cannot both fit the DURATION window) and return the
    ``effects`` entry that window counts (accounts/limits.py): ``{"funding": {source,
    lamports, destinationType}}`` to merge into the Transaction's effects; {} when nothing is funded."""
    if funding is None:
        return {}
    if funding.funder is not None:
        network_debit_check(lock_visible_account(funding.funder.pk, tenant=tenant), api_key=api_key, lamports=funding.lamports, destination_type=funding.destination_type, field=FEE_PAYER_FIELD)
    return {"funding": {"source": str(funding.pubkey), "lamports": funding.lamports, "destinationType": funding.destination_type}}


def account_create(ctx: OperationContext, *, data: dict) -> AccountResult:
    """Create Account (spec, Blockchain accounts 1): validate and draft (no writes), build
    and sign the funding transaction (network), then one write phase for the key, the
    account and the Transaction row."""
    tenant, cluster = ctx.tenant, ctx.cluster
    prefix = "itemData"
    account = account_draft(tenant=tenant, cluster=cluster, api_key=ctx.api_key, data=data, prefix=prefix)
    account_type, address = account.type, account.address
    already, seed, data_length = data.get("alreadyOnchain", False), data.get("seed"), data.get("dataLength") or 0

    plan = None
    if not already:
        rpc = rpc_for(cluster)
        owner = TOKEN_PROGRAMS[data.get("tokenVersion") or "SPL"] if account_type in MINT_TYPES and data_length else SYSTEM_PROGRAM
        # One rule for seed: when given (0 included) it must keep the new account rent
        # exempt; absent, no lamports move (or the rent minimum, with dataLength).
        if data_length or seed is not None:
            minimum = rpc.minimum_balance_for_rent_exemption(data_length)
            lamports = seed if seed is not None else minimum
            if lamports < minimum:
                what = f"An account of {data_length} bytes" if data_length else "A new account"
                raise LedgerError(f"{what} needs at least {minimum} lamports to be rent exempt.", field=f"{prefix}.seed", code="SEED_BELOW_RENT")
            plan = ("create" if data_length else "transfer", lamports, owner)

    prepared = funding = None
    if plan is not None:
        kind, lamports, owner = plan
        funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=lamports, destination_type="MANAGED" if account.managed else "NON_MANAGED")
        # A named funder pays the fee too; the airdrop funder holds exactly the amount, so
        # the platform fee payer pays the fee (fees only).
        config = transaction_config(tenant, cluster, ctx.svm_config)
        target = Pubkey.from_string(address)
        if kind == "create":
            ix = create_account(CreateAccountParams(from_pubkey=funding.pubkey, to_pubkey=target, lamports=lamports, space=data_length, owner=owner))
            signers = [funding.signer, SignerSpec(target, account.managed_key)]
        else:
            ix = transfer(TransferParams(from_pubkey=funding.pubkey, to_pubkey=target, lamports=lamports))
            signers = [funding.signer]
        prepared = transaction_build(context=ctx, operation=operations.CREATE, instructions=[ix], signers=signers, config=config)

    tx = None
    with write_phase(on_abort=prepared.release if prepared else None):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        if prepared is not None:
            # The Transaction row first, so the account is inserted once, PENDING and
            # pointing at it (its offchain id is known before it is saved).
            tx = transaction_record(prepared, effects_data={"account": str(account.offchain_id), **funded}, api_key=ctx.api_key, request_id=ctx.request_id)
            account.status = AccountStatus.PENDING
            account.creation_transaction = account.last_transaction = account.pending_transaction = tx
        account_save(account, prefix=prefix)
    return AccountResult(account, tx)


_PATCHABLE = {
    "comments": "comments",
    "domain": "domain",
    "subscribeToNetworkEvents": "subscribe_to_network_events",
    "shareAcrossTenants": "shared_across_tenants",
    "isGenesis": "is_genesis",
    "orgsAllowedToSignWithPrivateKey": "orgs_allowed_to_sign",
    "networkCurrencyDebitApiKeys": "network_currency_debit_api_keys",
    "tokenDebitApiKeys": "token_debit_api_keys",
}
_REFERENCE_FIELDS = {"code": "code", "alId": "al_id", "accountNumber": "account_number", "organizationExternalId": "organization_external_id", "name": "name", "type": "type"}


def account_update(ctx: OperationContext, *, account: Account, changes: dict) -> Account:
    """Update Account: patch semantics, only the fields present change (no transaction:
    one write phase under the account's row lock)."""
    with write_phase():
        return _account_update(ctx, account=lock_account(account.pk, tenant=ctx.tenant), changes=changes)


def _account_update(ctx: OperationContext, *, account: Account, changes: dict) -> Account:
    tenant, cluster = ctx.tenant, ctx.cluster
    refs = changes.get("offchainReferences") or {}
    new_type = refs.get("type") or account.type
    # A rule of the record, not of the body: the type enum is the same for every account.
    if refs.get("type") and refs["type"] != account.type:
        if account.type in SPECIALIZED_TYPES:
            raise LedgerError("The type of a position, lookup table or nonce account cannot change.", field="itemData.offchainReferences.type", code="IMMUTABLE")
        if refs["type"] in SPECIALIZED_TYPES:
            raise LedgerError(f"Only its own endpoint makes an account a {refs['type']}.", field="itemData.offchainReferences.type", code="USE_SPECIALIZED_ENDPOINT")
    _check_debit_settings(ctx.api_key, changes, new_type, "itemData")
    for name, column in _PATCHABLE.items():
        if name in changes:
            value = changes[name]
            setattr(account, column, value if value is not None else [])
    for name, column in _REFERENCE_FIELDS.items():
        if name in refs:
            setattr(account, column, refs[name] or "")
    for name, column in (("networkCurrencyDebitLimits", "network_currency_debit_limits"), ("tokenDebitLimits", "token_debit_limits")):
        if name in changes:
            setattr(account, column, normalize(changes[name]) if changes[name] is not None else None)
    if new_type not in WALLET_TYPES:
        account.network_currency_debit_limits = account.token_debit_limits = None
    numbered = {"accountNumber": account.account_number, "organizationExternalId": account.organization_external_id} if refs.get("accountNumber") else {}
    _conflicts(tenant, cluster, "", {k: refs.get(k) for k in ("code", "alId") if refs.get(k)} | numbered, exclude_pk=account.pk)
    if refs.get("alId"):
        _al_id_written(account)
    try:
        with transaction.atomic():
            account.save()
    except IntegrityError:
        raise ConflictError("Another account already uses this reference.", field="itemData.offchainReferences", code="DUPLICATE_REFERENCE")
    return account


def _inactivatable(account: Account) -> None:
    if account.status == AccountStatus.INACTIVE:
        raise LedgerError("The account is already inactive.", field="itemData.account", code="ACCOUNT_INACTIVE")
    if account.status == AccountStatus.PENDING:
        raise LedgerError("The account's creation is still in flight; retry once it is confirmed.", field="itemData.account", code="ACCOUNT_PENDING")
    ensure_no_operation_in_flight(account, field="itemData.account")


def account_inactivate(ctx: OperationContext, *, account: Account, refund_to, requested_by: str | None = None) -> AccountResult:
    """Inactivate Account: close it on the network (lamports to refundDestination) and
    mark it INACTIVE once that is confirmed; without lamports or a key, at once.

    Read and check, build and sign (no locks), then the write phase re-checks under the
    account's row lock (status, in-flight marker) and records the transaction with the
    marker set: a concurrent second inactivation gets 409 OPERATION_IN_PROGRESS.
    ``requested_by``: the staff user of an admin action (no API key), recorded on the
    transaction as created_by_key records a key."""
    tenant, cluster = ctx.tenant, ctx.cluster
    account = Account.objects.for_tenant(tenant).get(pk=account.pk)
    _inactivatable(account)
    destination = None
    if refund_to is not None:
        if isinstance(refund_to, OffPlatform):
            destination = refund_to.address
        else:
            ensure_usable(refund_to, field="itemData.refundDestination")
            destination = refund_to.address
        if destination == account.address:
            raise LedgerError("The refund destination is the account itself.", field="itemData.refundDestination", code="INVALID")
    onchain = rpc_for(cluster).account(Pubkey.from_string(account.address)) if account.status == AccountStatus.ACTIVE else None
    lamports = onchain.lamports if onchain is not None else 0
    if not lamports or not account.managed:
        if lamports and destination:
            raise LedgerError("The service does not hold this account's key, so it cannot move its lamports; inactivate without refundDestination.", field="itemData.refundDestination", code="NOT_MANAGED")
        with write_phase():
            account = lock_account(account.pk, tenant=tenant)
            _inactivatable(account)
            _mark_inactive(account, lamports)
        return AccountResult(account, None)
    if onchain.owner != SYSTEM_PROGRAM:
        raise LedgerError(f"The account is owned by program {onchain.owner}; close it through its area (positions, instruments, lookup tables).", field="itemData.account", code="NOT_CLOSABLE")
    if onchain.data:
        raise LedgerError("The account holds data (dataLength > 0): the System program cannot move its lamports out, so it cannot be closed.", field="itemData.account", code="NOT_CLOSABLE")
    if destination is None:
        raise LedgerError(f"The account holds {lamports} lamports; give refundDestination to receive them.", field="itemData.refundDestination", code="REFUND_DESTINATION_REQUIRED")
    config = transaction_config(tenant, cluster, ctx.svm_config)
    if config.fee_payer is not None and str(config.fee_payer.pubkey) == account.address:
        raise LedgerError("The account being closed cannot pay the fee for its own closing.", field="svmTransactionConfig.feePayer", code="INVALID")
    ix = transfer(TransferParams(from_pubkey=Pubkey.from_string(account.address), to_pubkey=Pubkey.from_string(destination), lamports=lamports))
    prepared = transaction_build(
        context=ctx, operation=operations.INACTIVATE, instructions=[ix],
        signers=[signer_for(account, tenant, field="itemData.account", require_platform=True)], config=config,
    )
    with write_phase(on_abort=prepared.release):
        account = lock_account(account.pk, tenant=tenant)
        _inactivatable(account)
        tx = transaction_record(prepared, effects_data={"account": str(account.offchain_id)}, api_key=ctx.api_key, request_id=ctx.request_id)
        if requested_by:
            TransactionEvent.objects.create(transaction=tx, kind="REQUESTED_IN_ADMIN", detail={"user": requested_by})
        account.last_transaction = account.pending_transaction = tx
        account.save(update_fields=["last_transaction", "pending_transaction", "updated_at"])
    return AccountResult(account, tx)


def _mark_inactive(account: Account, lamports: int = 0) -> None:
    account.status = AccountStatus.INACTIVE
    account.lamports_balance = lamports
    account.save(update_fields=["status", "lamports_balance", "updated_at"])


def account_private_key_export(*, tenant, api_key, account: Account, request_id: str) -> str:
    """Fetch Account Private Key: role-gated and audited (PrivateKeyDisclosure)."""
    require_role(api_key, Role.PLATFORM_SENSITIVE_DATA_ACCESS, why="export private keys")
    if account.tenant_id != tenant.pk:
        from ledger_project.api.errors import NotFoundError

        raise NotFoundError("No such account.", field="itemData")
    if ThresholdKey.objects.filter(account=account).exists():
        raise LedgerError("This account's key is a threshold key (dkgKeys): it exists only as its players' shares, and no one, the service "
                          "included, holds or can assemble its private key.", field="itemData", code="KEY_NOT_EXPORTABLE")
    if not account.managed or account.managed_key is None:
        raise LedgerError("The service does not hold this account's key.", field="itemData", code="NOT_MANAGED")
    PrivateKeyDisclosure.objects.create(account=account, api_key=api_key, acting_tenant=tenant, request_id=request_id)
    return custody.managed_key_export(key=account.managed_key)


