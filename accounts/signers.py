"""Who may sign: managed accounts the acting tenant can use (spec, Authentication 4).

A managed account signs on platform for its own organization and for the organizations
listed in its ``orgsAllowedToSignWithPrivateKey``; every other signer signs off platform
(the transaction waits PARTIALLY_SIGNED). Inactive accounts sign nothing.
"""

from __future__ import annotations

from solders.pubkey import Pubkey

from ledger_project.api.errors import ForbiddenError, LedgerError
from tenancy.scoping import worker_only
from transactions.services import SignerSpec, TxConfig

from .lookup import OffPlatform, named_nonce_config, resolve_account
from .models import Account, AccountStatus


def can_sign_on_platform(account: Account, tenant) -> bool:
    return (
        account.managed
        and account.managed_key_id is not None
        and account.status in (AccountStatus.ACTIVE, AccountStatus.PENDING)
        and (account.tenant_id == tenant.pk or tenant.external_id in (account.orgs_allowed_to_sign or []))
    )


def ensure_usable(account: Account, *, field: str) -> Account:
    if account.status == AccountStatus.INACTIVE:
        raise LedgerError("The account is inactive: it can neither sign nor receive.", field=field, code="ACCOUNT_INACTIVE")
    if account.status == AccountStatus.FAILED:
        raise LedgerError("The account was never created on chain.", field=field, code="ACCOUNT_NOT_ONCHAIN")
    return account


def signer_for(account: Account, tenant, *, field: str, require_platform: bool = False) -> SignerSpec:
    """The SignerSpec of an account: with its key when the tenant may use it."""
    ensure_usable(account, field=field)
    if can_sign_on_platform(account, tenant):
        # Another organization's key, shared with this one: where the engine signs, the
        # acting API key must pass the owner's debit API keys (transactions/platform_keys.py).
        shared = None
        if account.tenant_id != tenant.pk:
            shared = (tuple(account.network_currency_debit_api_keys or ()), tuple(account.token_debit_api_keys or ()))
        return SignerSpec(Pubkey.from_string(account.address), account.managed_key, field=field, shared_debit_api_keys=shared, account=account)
    if require_platform:
        raise ForbiddenError("This account's key cannot be used by this organization.", field=field, code="SIGNER_NOT_ALLOWED")
    return SignerSpec(Pubkey.from_string(account.address), None, field=field, account=account)


def sign_transaction_signer(*, tenant, cluster: str, api_key, lookup: dict, field: str, on_platform: bool) -> SignerSpec:
    """An account Sign Transaction names (transactions/signatures.py registers it as its
    AccountSigner; docs/transactions.md, "Sign Transaction and Submit Transaction").

    offPlatformSigning (``on_platform`` false): any account the lookup rules find, or an
    address the service does not record with ``offPlatform: true``; only its address is
    used — the signature proves the key. onPlatformSigning: a managed account the
    organization may sign with (its own, or another organization's shared account listing it
    in orgsAllowedToSignWithPrivateKey; spec, Authentication 4) whose debit API keys, when
    set, name the calling key: a signature authorizes whatever the message debits, and
    Sign Transaction does not read the message, so a key the account's networkCurrencyDebitApiKeys
    or tokenDebitApiKeys leave out may not sign with it. Otherwise 403 SIGNER_NOT_ALLOWED."""
    from tenancy.roles import api_key_may_debit

    resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=not on_platform)
    if isinstance(resolved, OffPlatform):
        return SignerSpec(Pubkey.from_string(resolved.address), None)
    pubkey = Pubkey.from_string(resolved.address)
    if not on_platform:
        return SignerSpec(pubkey, None)
    if not resolved.managed or resolved.managed_key_id is None:
        raise ForbiddenError("The service holds no key of this account: its signature comes off platform (offPlatformSigning).", field=field, code="SIGNER_NOT_ALLOWED")
    ensure_usable(resolved, field=field)
    if not can_sign_on_platform(resolved, tenant):
        raise ForbiddenError("This account's key cannot be used by this organization (its orgsAllowedToSignWithPrivateKey does not name it).", field=field, code="SIGNER_NOT_ALLOWED")
    if not (api_key_may_debit(resolved.network_currency_debit_api_keys, api_key) and api_key_may_debit(resolved.token_debit_api_keys, api_key)):
        raise ForbiddenError("This API key may not sign with this account's key: the account's networkCurrencyDebitApiKeys or tokenDebitApiKeys do not name it.", field=field, code="SIGNER_NOT_ALLOWED")
    return SignerSpec(pubkey, resolved.managed_key)


def transaction_config(tenant, cluster: str, data: dict | None) -> TxConfig:
    """svmTransactionConfig → TxConfig, resolving feePayer to a signer (default: the
    platform's) and durableNonceAccount to the tenant's nonce account (accounts/lookup.py, named_nonce_config)."""
    data = data or {}
    fee_payer = None
    if data.get("feePayer"):
        resolved = resolve_account(tenant, cluster, data["feePayer"], field="svmTransactionConfig.feePayer")
        if isinstance(resolved, OffPlatform):  # pragma: no cover - resolve_account refuses it here
            raise LedgerError("The fee payer must be an account the service knows.", field="svmTransactionConfig.feePayer")
        fee_payer = signer_for(resolved, tenant, field="svmTransactionConfig.feePayer")
    if fee_payer is None:
        # The platform pays when the request names no fee payer; resolved here so that
        # instructions needing the payer's address (create_account, top-ups) can use it.
        from transactions.fee_payers import platform_fee_payer

        fee_payer = platform_fee_payer(cluster)
    config = TxConfig.from_validated(data, fee_payer=fee_payer)
    if data.get("durableNonceAccount"):
        config = named_nonce_config(tenant, cluster, data, config)
    return config


@worker_only  # the pump re-signs for no request: the transaction names its tenant
def resign_signers(*, transaction, addresses: list[str]) -> dict[str, SignerSpec | None]:
    """Which of ``addresses`` (required signers of ``transaction``) are accounts, and whether
    the service may still sign with their keys for its organization (transactions/resign.py):
    a SignerSpec as when it was built (a shared account's debit API-key lists included, which
    the engine checks against the API key that requested it), or None when the account became
    inactive or is no longer shared with it. Addresses of no account's key are not answered."""
    answers: dict[str, SignerSpec | None] = {}
    rows = Account.unscoped.filter(cluster=transaction.cluster, address__in=addresses, managed_key__isnull=False).select_related("managed_key").order_by("pk")
    for account in rows:
        if answers.get(account.address) is not None:
            continue
        try:
            spec = signer_for(account, transaction.tenant, field="itemData")
        except LedgerError:
            spec = None
        answers[account.address] = spec if spec is not None and spec.signs_here else None
    return answers
