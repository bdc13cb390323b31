"""Debit limits of outgoing transfers (spec, Limits 1-2; docs/positions.md, "Debit limits
and approvals"): network currency from a wallet, tokens from a position.

Over a limit is not an error: the transaction is built and signed as usual, then recorded
held — PENDING_APPROVAL — and nothing is submitted until an approver releases it
(transactions/approvals.py). Only the debit API keys refuse (403 DEBIT_NOT_ALLOWED).

How a movement service uses it (Transfer Network Currency, positions/transfers.py, is the
worked example; token transfers, mints into others' positions, trades do the same)::

    # read phase (no writes): 403 DEBIT_NOT_ALLOWED early, before anything is signed
    debit_decision(tenant=..., api_key=..., kind=TOKEN, source=position.owner, position=position,
                   amount=units, destination=destination_owner, field="itemData.source")
    prepared = transaction_build(...)                                   # network phase
    with write_phase(on_abort=prepared.release):
        decision = debit_decision(..., lock=True)                       # again, under the lock
        tx = transaction_record(prepared, effects_data={..., **decision.effects},
                                hold_for_approval=decision.needs_approval, hold_reason=decision.reason)

- ``kind``: ``NETWORK_CURRENCY`` (``source`` is the debited wallet; its
  networkCurrencyDebitLimits and networkCurrencyDebitApiKeys) or ``TOKEN`` (``position`` is
  the debited position, ``source`` its owner; limits: the position's tokenDebitLimits, else
  the owner's, else ``token_default_limits``; API keys: both the position's and the owner's
  tokenDebitApiKeys lists, each when not empty, must name the key).
- ``destination``: the receiving account as resolved (an Account, an ``OffPlatform``, a
  Position — classified by its owner — or an address); see ``destination_type``.
- ``amount``: base units (lamports, token base units), an int.
- Only wallet-type sources (WALLET, ASSETS_WALLET, CURRENCIES_WALLET,
  DEFI_SETTLEMENT_WALLET) have limits; every source has its debit API keys.
- ``lock=True`` (the write phase): the debited account's row is locked
  (``accounts.locks.lock_visible_account``) and it and the position are read fresh, so two
  concurrent debits cannot jointly exceed a DURATION window (docs/style.md, "Locks and races"): the second
  sees the first's Transaction row. A service debiting several accounts (a trade) locks them
  all first, in pk order (``accounts.locks.lock_accounts``), then calls with ``lock=False``
  and the locked rows.
- The Decision's ``effects`` (``{"debits": [entry]}``, entry ``{kind, source, amount,
  destinationType, instrument?, position?}``) go into the Transaction's effects: that is
  what later DURATION windows sum (``accounts.limits.debited_within``). ``Decision.merge``
  combines several debits of one transaction (held when any is).
- A held transaction's signature (``onchain_id``) must not reach a response before it is
  approved (the transaction result hides it): do not render it elsewhere either (e.g. as
  a record's last transaction id) — with the message it may complete the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dataclass_field

from accounts.limits import (
    DEFAULT_NETWORK_CURRENCY_LIMITS,
    NETWORK_CURRENCY,
    TOKEN,
    debited_within,
    first_exceeded,
)
from accounts.locks import lock_visible_account
from accounts.lookup import OffPlatform
from accounts.models import Account, AccountType, WALLET_TYPES
from ledger_project.api.errors import ForbiddenError
from tenancy.roles import api_key_may_debit

from .models import Position

__all__ = ["NETWORK_CURRENCY", "TOKEN", "Decision", "debit_decision", "destination_type", "token_default_limits", "limits_for"]

_TOKEN_ACCOUNT_TYPES = {AccountType.FUNDS_TOKEN_ACCOUNT, AccountType.ASSET_TOKEN_ACCOUNT}


def token_default_limits(decimals: int) -> list[dict]:
    """Token-level defaults (spec, Limits 2: "defined under Initialize Position"): the
    network-currency table in the instrument's units — OFF_PLATFORM 0 per transaction and
    0 per 24 hours, NON_MANAGED one whole token (10^decimals base units, before any Scaled
    UI multiplier) per transaction and unlimited per 24 hours, MANAGED unlimited."""
    one = 10 ** int(decimals)
    return [
        {**entry, "maxAmountWithoutApproval": one} if entry["destinationType"] == "NON_MANAGED" and entry["limitType"] == "PER_TRANSACTION" else dict(entry)
        for entry in DEFAULT_NETWORK_CURRENCY_LIMITS
    ]


@dataclass(frozen=True)
class Decision:
    """Whether a debit needs approval, why (the held transaction's errorMessage), and the
    effects entries that record it."""

    needs_approval: bool
    reason: str = ""
    debits: tuple[dict, ...] = dataclass_field(default=())

    @property
    def effects(self) -> dict:
        return {"debits": [dict(d) for d in self.debits]}

    @classmethod
    def merge(cls, *decisions: "Decision") -> "Decision":
        held = [d for d in decisions if d.needs_approval]
        return cls(bool(held), " ".join(d.reason for d in held), tuple(entry for d in decisions for entry in d.debits))


#: Account type → ``fn(tenant, account)``: what controls an account that has no key of its
#: own (a program's PDA), classified in its place — registered by the area that records such
#: accounts (vaults: a vault authority is controlled by the vault's admin); None: classify
#: the account itself.
CONTROLLED_BY: dict = {}


def destination_type(tenant, cluster: str, destination) -> str:
    """OFF_PLATFORM: not onboarded in the acting organization's records (an off-platform
    address, or another organization's shared account); NON_MANAGED: onboarded, key not
    hosted; MANAGED: onboarded, key hosted. A token account (a position) is classified by its
    owner: the tokens go to whoever holds the owner's key; a keyless owner registered in
    ``CONTROLLED_BY`` by whoever controls it."""
    if isinstance(destination, Position):
        destination = destination.owner
    if isinstance(destination, OffPlatform):
        destination = destination.address
    if isinstance(destination, str):
        destination = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=destination).first()
        if destination is None:
            return "OFF_PLATFORM"
    if destination.tenant_id != tenant.pk:
        return "OFF_PLATFORM"
    controller = CONTROLLED_BY.get(destination.type)
    controlled = controller(tenant, destination) if controller is not None else None
    if controlled is not None:
        return destination_type(tenant, cluster, controlled)
    if destination.type in _TOKEN_ACCOUNT_TYPES:
        position = Position.objects.for_tenant(tenant).filter(account=destination).select_related("owner").first()
        if position is not None:
            return destination_type(tenant, cluster, position.owner)
    return "MANAGED" if destination.managed and destination.managed_key_id is not None else "NON_MANAGED"


def limits_for(kind: str, source: Account, position: Position | None = None) -> tuple[list[dict], str]:
    """The limits that apply to a debit and where they come from (for the reason text)."""
    # A loan remittance vault's authority (a PDA) debits the vault's position: its token
    # limits apply as a wallet's do (docs/vaults.md, "Repayments and debit limits").
    if source.type not in WALLET_TYPES and not (kind == TOKEN and source.type == AccountType.VAULT_AUTHORITY):
        return [], "none: not a wallet"
    if kind == NETWORK_CURRENCY:
        if source.network_currency_debit_limits is not None:
            return list(source.network_currency_debit_limits), "the account's networkCurrencyDebitLimits"
        return [dict(e) for e in DEFAULT_NETWORK_CURRENCY_LIMITS], "the default networkCurrencyDebitLimits"
    if position is not None and position.token_debit_limits is not None:
        return list(position.token_debit_limits), "the position's tokenDebitLimits"
    if source.token_debit_limits is not None:
        return list(source.token_debit_limits), "the owner's tokenDebitLimits"
    return token_default_limits(position.instrument.decimals), "the default tokenDebitLimits"


def _check_keys(kind: str, source: Account, position: Position | None, api_key, field: str) -> None:
    if kind == NETWORK_CURRENCY:
        if not api_key_may_debit(source.network_currency_debit_api_keys, api_key):
            raise ForbiddenError("This API key is not in the account's networkCurrencyDebitApiKeys.", field=field, code="DEBIT_NOT_ALLOWED")
        return
    if position is not None and not api_key_may_debit(position.token_debit_api_keys, api_key):
        raise ForbiddenError("This API key is not in the position's tokenDebitApiKeys.", field=field, code="DEBIT_NOT_ALLOWED")
    if not api_key_may_debit(source.token_debit_api_keys, api_key):
        raise ForbiddenError("This API key is not in the owner account's tokenDebitApiKeys.", field=field, code="DEBIT_NOT_ALLOWED")


def debit_decision(
    *, tenant, api_key, kind: str, source: Account, amount: int, destination, field: str, position: Position | None = None, lock: bool = False,
    already=None,
) -> Decision:
    """Decide a debit of ``amount`` base units from ``source`` (see the module docstring):
    403 DEBIT_NOT_ALLOWED when the API key may not debit; else a Decision, held when a
    PER_TRANSACTION or DURATION limit for the destination's type would be exceeded.

    ``already(destination_type)``: base units of debits decided but not recorded yet that
    DURATION windows must count too (a batch's earlier items: positions/batches.py)."""
    if kind not in (NETWORK_CURRENCY, TOKEN):
        raise ValueError(f"unknown debit kind {kind!r}")
    if kind == TOKEN and position is None:
        raise ValueError("a token debit names the debited position")
    if lock:
        source = lock_visible_account(source.pk, tenant=tenant)
        if position is not None:
            position = Position.objects.for_tenant(tenant).select_related("instrument").get(pk=position.pk)
    _check_keys(kind, source, position, api_key, field)
    target = destination_type(tenant, source.cluster, destination)
    instrument = position.instrument.address if kind == TOKEN else None
    entry = {"kind": kind, "source": source.address, "amount": int(amount), "destinationType": target}
    if kind == TOKEN:
        entry |= {"instrument": instrument, "position": position.address}
    entries, origin = limits_for(kind, source, position)
    exceeded = first_exceeded(
        entries, destination_type=target, amount=int(amount),
        spent=lambda hours: debited_within(source, hours=hours, kind=kind, destination_type=target, instrument=instrument) + (already(target) if already is not None else 0),
    )
    if exceeded is None:
        return Decision(False, "", (entry,))
    unit = "lamports" if kind == NETWORK_CURRENCY else "base units"
    window = f" within {exceeded.get('durationHours') or 24} hours (counting what the account already debited)" if exceeded["limitType"] == "DURATION" else ""
    reason = (
        f"Held for approval: {int(amount)} {unit} to a {target} destination is over the {exceeded['limitType']} limit of "
        f"{exceeded['maxAmountWithoutApproval']} {unit}{window} ({origin})."
    )
    return Decision(True, reason, (entry,))
