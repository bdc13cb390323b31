"""Writes of the accounts area (docs/accounts.md)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer

from ledger_project.api.errors import ConflictError, LedgerError
from ledger_project.api.permissions import require_role
from tenancy.roles import Role
from transactions.chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import transaction_prepare

from . import custody
from .limits import normalize
from .lookup import OffPlatform
from .models import Account, AccountStatus, AccountType, BalanceSnapshot, KeyLocation, PrivateKeyDisclosure, SPECIALIZED_TYPES, WALLET_TYPES
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


def _managed_key(data: dict, prefix: str):
    details = data.get("privateKeyDetails") or {}
    if details.get("dkgKeys"):
        raise LedgerError("DKG/MPC key shares are not supported by this service; omit dkgKeys.", field=f"{prefix}.privateKeyDetails.dkgKeys", code="NOT_SUPPORTED")
    locations = details.get("location") or [KeyLocation.DATABASE]
    location = locations[0]
    expected = details.get("publickKey") or data.get("onchainId")
    if details.get("privateKey"):
        try:
            return custody.managed_key_import(secret=details["privateKey"], location=location, expected_public_key=expected)
        except LedgerError as exc:
            exc.field = f"{prefix}.privateKeyDetails.privateKey"
            raise
    if expected:
        raise LedgerError("A managed account with a given onchainId needs its privateKey (or omit onchainId to have a key generated).", field=f"{prefix}.privateKeyDetails.privateKey", code="REQUIRED")
    return custody.managed_key_generate(location=location)


def account_record(*, tenant, cluster: str, api_key, data: dict, prefix: str = "itemData", default_type: str = AccountType.WALLET, allowed_types=None) -> Account:
    """Validate a New account definition and save its record (no transaction): the key is
    generated or imported, onboarding checks the network. Shared by Create Account and the
    areas whose records are accounts too (a financial instrument's mint)."""
    refs = data.get("offchainReferences") or {}
    account_type = refs.get("type") or default_type
    if allowed_types is not None and account_type not in allowed_types:
        raise LedgerError(f"type must be one of {', '.join(sorted(allowed_types))} here.", field=f"{prefix}.offchainReferences.type", code="INVALID_ACCOUNT_TYPE")
    if account_type in SPECIALIZED_TYPES:
        raise LedgerError(f"{account_type} accounts are created with {_SPECIALIZED_ENDPOINT[account_type]}.", field=f"{prefix}.offchainReferences.type", code="USE_SPECIALIZED_ENDPOINT")
    _check_debit_settings(api_key, data, account_type, prefix)
    managed = data.get("managed", True)
    already = data.get("alreadyOnchain", False)
    seed = data.get("seed")
    data_length = data.get("dataLength") or 0
    if not managed and not data.get("onchainId"):
        raise LedgerError("A not-managed account needs its onchainId.", field=f"{prefix}.onchainId", code="REQUIRED")
    if not managed and (data.get("privateKeyDetails") or {}).get("privateKey"):
        raise LedgerError("A not-managed account cannot carry a private key; set managed true to import it.", field=f"{prefix}.privateKeyDetails.privateKey", code="INVALID")
    if already and (seed or data_length):
        raise LedgerError("seed and dataLength describe a new onchain account; they do not apply with alreadyOnchain.", field=f"{prefix}.seed" if seed else f"{prefix}.dataLength", code="INVALID")
    if data_length and not managed:
        raise LedgerError("Space can be allocated only for a managed account (its key signs the creation).", field=f"{prefix}.dataLength", code="INVALID")
    if data.get("tokenVersion") and account_type not in MINT_TYPES:
        raise LedgerError("tokenVersion applies to mint accounts (FUNDS_TOKEN, ASSET_TOKEN, CURRENCY_TOKEN).", field=f"{prefix}.tokenVersion", code="INVALID")

    address_hint = data.get("onchainId") or (data.get("privateKeyDetails") or {}).get("publickKey") or ""
    _conflicts(tenant, cluster, address_hint, refs, prefix=prefix)
    key = _managed_key(data, prefix) if managed else None
    address = key.public_key if key else data["onchainId"]
    if key is not None:
        _conflicts(tenant, cluster, address, {}, prefix=prefix)

    onchain = None
    if already and not data.get("skipBlockchainExistenceVerification"):
        onchain = rpc_for(cluster).account(Pubkey.from_string(address))
        if onchain is None:
            raise LedgerError("No such account on the network; create it instead, or set skipBlockchainExistenceVerification.", field=f"{prefix}.onchainId", code="ACCOUNT_NOT_ONCHAIN")

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
    try:
        with transaction.atomic():
            account.save()
    except IntegrityError:
        raise ConflictError("An account with this onchainId or reference already exists.", field=f"{prefix}.onchainId", code="DUPLICATE_ACCOUNT")
    return account


def account_create(*, tenant, cluster: str, api_key, data: dict, svm_config: dict | None = None, request_id=None) -> AccountResult:
    """Create Account (spec, Blockchain accounts 1)."""
    prefix = "itemData"
    account = account_record(tenant=tenant, cluster=cluster, api_key=api_key, data=data, prefix=prefix)
    account_type, address = account.type, account.address
    already, seed, data_length = data.get("alreadyOnchain", False), data.get("seed"), data.get("dataLength") or 0
    rpc = rpc_for(cluster)

    instructions = []
    if not already:
        owner = TOKEN_PROGRAMS[data.get("tokenVersion") or "SPL"] if account_type in MINT_TYPES and data_length else SYSTEM_PROGRAM
        if data_length:
            minimum = rpc.minimum_balance_for_rent_exemption(data_length)
            lamports = seed if seed is not None else minimum
            if lamports < minimum:
                raise LedgerError(f"An account of {data_length} bytes needs at least {minimum} lamports to be rent exempt.", field=f"{prefix}.seed", code="SEED_BELOW_RENT")
            instructions.append(("create", lamports, owner))
        elif seed:
            minimum = rpc.minimum_balance_for_rent_exemption(0)
            if seed < minimum:
                raise LedgerError(f"A new account needs at least {minimum} lamports to be rent exempt.", field=f"{prefix}.seed", code="SEED_BELOW_RENT")
            instructions.append(("transfer", seed, None))

    tx = None
    if instructions:
        config = transaction_config(tenant, cluster, svm_config)
        payer = config.fee_payer
        kind, lamports, owner = instructions[0]
        target = Pubkey.from_string(address)
        if kind == "create":
            ix = create_account(CreateAccountParams(from_pubkey=payer.pubkey, to_pubkey=target, lamports=lamports, space=data_length, owner=owner))
            signers = [signer_for(account, tenant, field=f"{prefix}.onchainId")]
        else:
            ix = transfer(TransferParams(from_pubkey=payer.pubkey, to_pubkey=target, lamports=lamports))
            signers = []
        tx = transaction_prepare(
            tenant=tenant, cluster=cluster, operation="accounts.create", instructions=[ix], signers=signers,
            config=config, effects_data={"account": str(account.offchain_id)}, api_key=api_key, request_id=request_id,
        )
        account.status = AccountStatus.PENDING
        account.creation_transaction = tx
        account.last_transaction = tx
        account.save(update_fields=["status", "creation_transaction", "last_transaction", "updated_at"])
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


def account_update(*, tenant, cluster: str, api_key, account: Account, changes: dict) -> Account:
    """Update Account: patch semantics, only the fields present change."""
    account = Account.unscoped.select_for_update().get(pk=account.pk)
    refs = changes.get("offchainReferences") or {}
    new_type = refs.get("type") or account.type
    if "type" in refs and refs["type"] and refs["type"] != account.type and (refs["type"] in SPECIALIZED_TYPES or account.type in SPECIALIZED_TYPES):
        raise LedgerError("The type of a position, lookup table or nonce account cannot change.", field="itemData.offchainReferences.type", code="INVALID")
    _check_debit_settings(api_key, changes, new_type, "itemData")
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
    _conflicts(tenant, cluster, "", {k: refs.get(k) for k in ("code", "alId") if refs.get(k)} | ({"accountNumber": account.account_number, "organizationExternalId": account.organization_external_id} if refs.get("accountNumber") else {}), exclude_pk=account.pk)
    try:
        with transaction.atomic():
            account.save()
    except IntegrityError:
        raise ConflictError("Another account already uses this reference.", field="itemData.offchainReferences", code="DUPLICATE_REFERENCE")
    return account


def account_inactivate(*, tenant, cluster: str, api_key, account: Account, refund_to, svm_config: dict | None = None, request_id=None) -> AccountResult:
    """Inactivate Account: close it on the network (lamports to refundDestination) and
    mark it INACTIVE once that is confirmed; without lamports or a key, at once."""
    account = Account.unscoped.select_for_update().get(pk=account.pk)
    if account.status == AccountStatus.INACTIVE:
        raise LedgerError("The account is already inactive.", field="itemData.account", code="ACCOUNT_INACTIVE")
    if account.status == AccountStatus.PENDING:
        raise LedgerError("The account's creation is still in flight; retry once it is confirmed.", field="itemData.account", code="ACCOUNT_PENDING")
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
        _mark_inactive(account, lamports)
        return AccountResult(account, None)
    if onchain.owner != SYSTEM_PROGRAM:
        raise LedgerError(f"The account is owned by program {onchain.owner}; close it through its area (positions, instruments, lookup tables).", field="itemData.account", code="NOT_CLOSABLE")
    if onchain.data:
        raise LedgerError("The account holds data (dataLength > 0): the System program cannot move its lamports out, so it cannot be closed.", field="itemData.account", code="NOT_CLOSABLE")
    if destination is None:
        raise LedgerError(f"The account holds {lamports} lamports; give refundDestination to receive them.", field="itemData.refundDestination", code="REQUIRED")
    config = transaction_config(tenant, cluster, svm_config)
    if config.fee_payer is not None and str(config.fee_payer.pubkey) == account.address:
        raise LedgerError("The account being closed cannot pay the fee for its own closing.", field="svmTransactionConfig.feePayer", code="INVALID")
    ix = transfer(TransferParams(from_pubkey=Pubkey.from_string(account.address), to_pubkey=Pubkey.from_string(destination), lamports=lamports))
    tx = transaction_prepare(
        tenant=tenant, cluster=cluster, operation="accounts.inactivate", instructions=[ix],
        signers=[signer_for(account, tenant, field="itemData.account", require_platform=True)], config=config,
        effects_data={"account": str(account.offchain_id)}, api_key=api_key, request_id=request_id,
    )
    account.last_transaction = tx
    account.save(update_fields=["last_transaction", "updated_at"])
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
    if not account.managed or account.managed_key is None:
        raise LedgerError("The service does not hold this account's key.", field="itemData", code="NOT_MANAGED")
    PrivateKeyDisclosure.objects.create(account=account, api_key=api_key, acting_tenant=tenant, request_id=request_id)
    return custody.managed_key_export(key=account.managed_key)


def balances_record(*, accounts: list[Account], lamports: dict[str, int], transaction_row: Transaction | None, at=None) -> None:
    """Write offchain balances and their history (one snapshot per change)."""
    at = at or timezone.now()
    snapshots = []
    for account in accounts:
        value = lamports.get(account.address)
        if value is None:
            continue
        changed = int(account.lamports_balance) != value
        account.lamports_balance = value
        if transaction_row is not None:
            account.last_transaction = transaction_row
            account.last_transaction_at = at
        account.save(update_fields=["lamports_balance", "last_transaction", "last_transaction_at", "updated_at"])
        if changed or not account.balance_history.exists():
            snapshots.append(BalanceSnapshot(account=account, lamports=value, transaction=transaction_row, at=at))
    BalanceSnapshot.objects.bulk_create(snapshots)
