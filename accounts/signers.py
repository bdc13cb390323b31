"""Who may sign: managed accounts the acting tenant can use (spec, Authentication 4).

A managed account signs on platform for its own organization and for the organizations
listed in its ``orgsAllowedToSignWithPrivateKey``; every other signer signs off platform
(the transaction waits PARTIALLY_SIGNED). Inactive accounts sign nothing.
"""

from __future__ import annotations

from solders.pubkey import Pubkey

from ledger_project.api.errors import ForbiddenError, LedgerError
from transactions.services import SignerSpec, TxConfig

from .lookup import OffPlatform, resolve_account
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
        return SignerSpec(Pubkey.from_string(account.address), account.managed_key)
    if require_platform:
        raise ForbiddenError("This account's key cannot be used by this organization.", field=field, code="SIGNER_NOT_ALLOWED")
    return SignerSpec(Pubkey.from_string(account.address), None)


def transaction_config(tenant, cluster: str, data: dict | None) -> TxConfig:
    """svmTransactionConfig → TxConfig, resolving feePayer to a signer (default: the
    platform's) and durableNonceAccount to the tenant's nonce account (accounts/nonces.py)."""
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
        from .nonces import named_nonce_config  # it builds on this module

        config = named_nonce_config(tenant, cluster, data, config)
    return config
