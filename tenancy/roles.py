"""The complete list of API key roles (docs/auth.md).

A key with no roles can use every ordinary operation of its own organization; roles only
unlock the extra, riskier operations named here.
"""

from django.db import models


class Role(models.TextChoices):
    # Spec, Authentication 3: setting networkCurrencyDebitApiKeys / tokenDebitApiKeys.
    PLATFORM_UPDATE_DEBIT_API_KEYS = "PLATFORM_UPDATE_DEBIT_API_KEYS", "Set debit API keys of accounts"
    # Spec: "a role whose name begins PLATFORM_SENSITIVE_DATA_ACCES" (truncated there); this
    # is the full name. Needed by Fetch Account Private Key.
    PLATFORM_SENSITIVE_DATA_ACCESS = "PLATFORM_SENSITIVE_DATA_ACCESS", "Export private keys of managed accounts"
    # tenancyConfig.overrideOrganizationExternalId: act for another organization.
    PLATFORM_CROSS_TENANT_ACCESS = "PLATFORM_CROSS_TENANT_ACCESS", "Act for another organization"
    # Release transactions held for approval (debit limits exceeded).
    PLATFORM_APPROVE_TRANSACTIONS = "PLATFORM_APPROVE_TRANSACTIONS", "Approve held transactions"


ALL_ROLES: frozenset[str] = frozenset(Role.values)


def api_key_may_debit(allowed: list[str] | None, api_key) -> bool:
    """``networkCurrencyDebitApiKeys`` / ``tokenDebitApiKeys``: when not empty, only the API
    keys listed (by key id or name) may debit. No key (admin, workers) is not restricted."""
    if not allowed or api_key is None:
        return True
    return api_key.key_id in allowed or bool(api_key.name and api_key.name in allowed)
