"""Fast rendering of account responses (the hot path of details and bulk pages).

DRF serializers cost ~1 ms per nested account (field deep-copies); these functions build
the same dicts directly. ``serializers.AccountOutput`` / ``AccountCompactOutput`` remain the
documented schema, and a test keeps both in step.
"""

from __future__ import annotations

import uuid

from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text

from .limits import effective_limits


def uuid_text(value) -> str | None:
    # Raw rows carry UUIDs as the backend gives them (SQLite: 32 hex digits).
    return str(uuid.UUID(str(value))) if value else None


def _opt_int(value):
    return int(value) if value is not None else None


@renders("accounts.serializers.AccountOutput")
def account_detailed(a) -> dict:
    last_sig, last_id = getattr(a, "last_tx_signature", None), getattr(a, "last_tx_offchain", None)
    creation_sig, creation_id = getattr(a, "creation_tx_signature", None), getattr(a, "creation_tx_offchain", None)
    return {
        "onchain": {
            "id": a.address,
            "lastTransactionId": last_sig,
            "lastTransactionAt": timestamp_text(a.last_transaction_at),
            "creationTransactionId": creation_sig,
            "creationTransactionAt": timestamp_text(a.creation_transaction_at),
        },
        "offchain": {
            "id": str(a.offchain_id),
            "type": a.type,
            "code": a.code,
            "alId": a.al_id,
            "organizationExternalId": a.organization_external_id,
            "accountNumber": a.account_number,
            "name": a.name,
            "lamportsBalance": int(a.lamports_balance),
            "tokenBalance": _opt_int(a.token_balance),
            "tokenDecimals": a.token_decimals,
            "lastTransactionId": uuid_text(last_id),
            "creationTransactionId": uuid_text(creation_id),
        },
        "managed": a.managed,
        "status": a.status,
        "privateKeyLocation": list(a.private_key_location or []),
        "isDerived": a.is_derived,
        "comments": a.comments,
        "subscribeToNetworkEvents": a.subscribe_to_network_events,
        "sharedAcrossTenants": a.shared_across_tenants,
        "wasOnchainAlready": a.was_onchain_already,
        "canPayFees": a.can_pay_fees,
        "globalFeePayerForOrgs": list(a.global_fee_payer_for_orgs or []),
        "solDebitApiKeys": list(a.network_currency_debit_api_keys or []),
        "tokenDebitApiKeys": list(a.token_debit_api_keys or []),
        "domain": a.domain,
        "tenantOrganizationId": a.tenant_external_id,
        "networkCurrencyDebitLimits": effective_limits(a, "networkCurrency"),
        "tokenDebitLimits": effective_limits(a, "token"),
        "orgsAllowedToSignWithPrivateKey": list(a.orgs_allowed_to_sign or []),
        "dataLength": a.data_length,
    }


@renders("accounts.serializers.AccountCompactOutput")
def account_compact(a) -> dict:
    return {
        "onchain": {"id": a.address},
        "offchain": {"id": str(a.offchain_id), "type": a.type, "code": a.code, "alId": a.al_id, "accountNumber": a.account_number, "name": a.name, "lamportsBalance": int(a.lamports_balance)},
        "managed": a.managed,
        "status": a.status,
        "tenantOrganizationId": a.tenant_external_id,
    }


@renders("accounts.serializers.AccountIdentifiersOutput")
def account_identifiers(a) -> dict:
    return {"onchainId": a.address, "offchainId": str(a.offchain_id)}


RENDERERS = {"detailed": account_detailed, "compact": account_compact, "identifiers": account_identifiers}
