"""Paying a transaction's fee is a debit of the account that pays it (docs/transactions.md,
"Who pays the fee, and how much at most"): the engine asks this rule wherever it builds a
message an organization's account pays for (``svmTransactionConfig.feePayer``, own or
shared), registered in ``AccountsConfig.ready`` (transactions/fees.py).

- The acting API key must be one the account's networkCurrencyDebitApiKeys name (when set),
  as for any network-currency debit of it: else 403 DEBIT_NOT_ALLOWED on the feePayer field,
  before anything is signed. (Another organization's shared account: its owner's lists,
  where its key signs — 403 SIGNER_NOT_ALLOWED, transactions/platform_keys.py.)
- The most the fee can be (5,000 lamports a signature + the prioritization fee) counts
  against the account's networkCurrencyDebitLimits — the spec's defaults where none are set —
  as a debit to a NON_MANAGED destination: the lamports leave the organization's records
  for the cluster's validators, whom nobody onboards and whose keys nobody here holds, and
  they are not a counterparty the organization chose (OFF_PLATFORM, whose default limit of 0
  would hold every transaction an account pays for). So by default a fee over 1 SOL is held
  for approval, and a NON_MANAGED DURATION limit counts the account's fees with its other
  NON_MANAGED debits. PER_TRANSACTION compares the fee plus whatever else the transaction
  debits the account to NON_MANAGED destinations.
"""

from __future__ import annotations

from transactions.fees import FeeDebit

from ledger_project.api.errors import ForbiddenError
from tenancy.roles import api_key_may_debit

from .limits import NETWORK_CURRENCY, debited_within, effective_limits, first_exceeded
from .locks import lock_visible_account
from .models import Account, WALLET_TYPES

FEE_DESTINATION_TYPE = "NON_MANAGED"


def _has_window(account: Account) -> bool:
    return account.type in WALLET_TYPES and any(
        e["limitType"] == "DURATION" and e["destinationType"] == FEE_DESTINATION_TYPE and e.get("maxAmountWithoutApproval") is not None
        for e in effective_limits(account, NETWORK_CURRENCY)
    )


def fee_payer_rule(*, tenant, api_key, payer, lamports: int, field: str, lock: bool, already=None) -> FeeDebit | None:
    account: Account | None = getattr(payer, "account", None)
    if account is None:
        return None
    if lock and _has_window(account):
        # Under the row lock, read fresh, only where a DURATION window is to be kept: two
        # concurrent transactions must not both fit it. Without one there is nothing a
        # concurrent debit can change, and a fee payer many requests name is not serialized.
        account = lock_visible_account(account.pk, tenant=tenant)
    # Another organization's account shared with this one: its owner's debit API keys are
    # checked where its key signs (transactions.platform_keys.shared_key_check, 403
    # SIGNER_NOT_ALLOWED), whatever the role; its limits are checked here like an own one's.
    if account.tenant_id == tenant.pk and not api_key_may_debit(account.network_currency_debit_api_keys, api_key):
        raise ForbiddenError(
            "This API key is not in the fee payer's networkCurrencyDebitApiKeys: paying a transaction's fee debits the account.",
            field=field, code="DEBIT_NOT_ALLOWED",
        )
    entry = {"kind": NETWORK_CURRENCY, "source": account.address, "amount": int(lamports), "destinationType": FEE_DESTINATION_TYPE, "fee": True}
    # The network phase (no lock) refuses early on the keys alone; whether the fee is held is
    # decided once, in the write phase, with the transaction's other debits and the window.
    if not lock or account.type not in WALLET_TYPES:
        return FeeDebit(False, "", entry)
    besides = int(already(entry)) if already is not None else 0
    entries = effective_limits(account, NETWORK_CURRENCY)
    per_transaction = [e for e in entries if e["limitType"] == "PER_TRANSACTION"]
    durations = [e for e in entries if e["limitType"] == "DURATION"]
    exceeded = first_exceeded(per_transaction, destination_type=FEE_DESTINATION_TYPE, amount=int(lamports) + besides, spent=lambda hours: 0)
    if exceeded is None:
        exceeded = first_exceeded(
            durations, destination_type=FEE_DESTINATION_TYPE, amount=int(lamports),
            spent=lambda hours: debited_within(account, hours=hours, kind=NETWORK_CURRENCY, destination_type=FEE_DESTINATION_TYPE) + besides,
        )
    if exceeded is None:
        return FeeDebit(False, "", entry)
    window = f" within {exceeded.get('durationHours') or 24} hours (counting what the account already debited)" if exceeded["limitType"] == "DURATION" else ""
    origin = "the account's networkCurrencyDebitLimits" if account.network_currency_debit_limits is not None else "the default networkCurrencyDebitLimits"
    reason = (
        f"Held for approval: the fee of at most {int(lamports)} lamports that {account.address} pays ({field})"
        f"{f' with the {besides} lamports this transaction debits it besides' if besides and exceeded['limitType'] == 'PER_TRANSACTION' else ''} is over the "
        f"{exceeded['limitType']} limit of {exceeded['maxAmountWithoutApproval']} lamports for {FEE_DESTINATION_TYPE} destinations{window} "
        f"({origin}; a fee counts as a {FEE_DESTINATION_TYPE} debit)."
    )
    return FeeDebit(True, reason, entry)
