"""The debit-limit engine (positions/limits.py) on records alone: destination types, which
limits apply (position → owner → token defaults; an empty array = none), the debit API
keys, and the rolling window over Transaction rows (made in the past by moving their time)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from solders.keypair import Keypair

from custody import services as custody
from accounts.limits import NETWORK_CURRENCY, TOKEN, effective_limits
from accounts.lookup import OffPlatform
from accounts.tests.factories import AccountFactory
from instruments.tests.factories import FinancialInstrumentFactory
from ledger_project.api.errors import ForbiddenError
from positions.limits import Decision, debit_decision, destination_type, token_default_limits
from positions.models import Position
from tenancy.tests.factories import issue_key
from transactions.models import Transaction, TransactionStatus

CLUSTER = "CHAIN_LOCALNET"
SOL = 10**9


def nowhere() -> OffPlatform:
    return OffPlatform(str(Keypair().pubkey()))


def managed_account(tenant, **fields):
    key = custody.managed_key_generate()
    return AccountFactory(tenant=tenant, address=key.public_key, managed=True, managed_key=key, **fields)


def position(tenant, owner, instrument, **fields) -> Position:
    token_account = AccountFactory(tenant=tenant, type="ASSET_TOKEN_ACCOUNT")
    return Position.unscoped.create(
        tenant=tenant, cluster=CLUSTER, account=token_account, address=token_account.address, owner=owner, owner_address=owner.address,
        instrument=instrument, **fields,
    )


def past_debit(tenant, entry: dict, *, hours_ago: float, status: str = TransactionStatus.CONFIRMED) -> Transaction:
    """A Transaction row recording ``entry`` as if built ``hours_ago`` hours ago."""
    tx = Transaction.unscoped.create(tenant=tenant, cluster=CLUSTER, operation="test.debit", effects={"debits": [entry]}, status=status, message=b"", blockhash="x", fee_payer="x")
    Transaction.unscoped.filter(pk=tx.pk).update(txn_timestamp=timezone.now() - timedelta(hours=hours_ago))
    return tx


def decide(tenant, source, amount, destination, *, kind=NETWORK_CURRENCY, api_key=None, **kwargs) -> Decision:
    return debit_decision(tenant=tenant, api_key=api_key, kind=kind, source=source, amount=amount, destination=destination, field="itemData.source", **kwargs)


@pytest.mark.django_db
def test_destination_types_follow_the_acting_organizations_records(tenant, other_tenant):
    mine_managed, mine_watched = managed_account(tenant), AccountFactory(tenant=tenant)
    theirs = managed_account(other_tenant, shared_across_tenants=True)
    assert destination_type(tenant, CLUSTER, mine_managed) == "MANAGED"
    assert destination_type(tenant, CLUSTER, mine_watched) == "NON_MANAGED"
    assert destination_type(tenant, CLUSTER, mine_watched.address) == "NON_MANAGED"
    assert destination_type(tenant, CLUSTER, nowhere()) == "OFF_PLATFORM"
    # Another organization's account is not onboarded in this one's records, key hosted or not.
    assert destination_type(tenant, CLUSTER, theirs) == "OFF_PLATFORM"
    assert destination_type(tenant, CLUSTER, theirs.address) == "OFF_PLATFORM"
    # A token account goes by its owner: tokens go to whoever holds the owner's key.
    held = position(tenant, mine_managed, FinancialInstrumentFactory(tenant=tenant))
    assert destination_type(tenant, CLUSTER, held) == "MANAGED"
    assert destination_type(tenant, CLUSTER, held.account) == "MANAGED"
    assert destination_type(tenant, CLUSTER, held.address) == "MANAGED"


@pytest.mark.django_db
def test_network_currency_defaults_hold_each_row(tenant):
    source = AccountFactory(tenant=tenant)
    off, watched, managed = nowhere(), AccountFactory(tenant=tenant), managed_account(tenant)
    assert decide(tenant, source, 1, off).needs_approval  # OFF_PLATFORM: 0
    assert not decide(tenant, source, SOL, watched).needs_approval  # NON_MANAGED: 1 SOL per transaction
    held = decide(tenant, source, SOL + 1, watched)
    assert held.needs_approval and "NON_MANAGED" in held.reason and "PER_TRANSACTION" in held.reason and "default" in held.reason
    assert not decide(tenant, source, 10**6 * SOL, managed).needs_approval  # MANAGED: unlimited
    assert held.effects == {"debits": [{"kind": NETWORK_CURRENCY, "source": source.address, "amount": SOL + 1, "destinationType": "NON_MANAGED"}]}


@pytest.mark.django_db
def test_token_defaults_are_the_network_table_in_the_instruments_units(tenant):
    assert token_default_limits(2) == [
        {"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 0, "durationHours": None},
        {"destinationType": "OFF_PLATFORM", "limitType": "DURATION", "maxAmountWithoutApproval": 0, "durationHours": 24},
        {"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 100, "durationHours": None},
        {"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
        {"destinationType": "MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": None, "durationHours": None},
        {"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": None, "durationHours": 24},
    ]
    owner = AccountFactory(tenant=tenant)
    bond = FinancialInstrumentFactory(tenant=tenant, decimals=2)
    held = position(tenant, owner, bond)
    watched = AccountFactory(tenant=tenant)
    assert not decide(tenant, owner, 100, watched, kind=TOKEN, position=held).needs_approval
    assert decide(tenant, owner, 101, watched, kind=TOKEN, position=held).needs_approval
    assert decide(tenant, owner, 1, nowhere(), kind=TOKEN, position=held).needs_approval
    decision = decide(tenant, owner, 101, watched, kind=TOKEN, position=held)
    assert decision.effects["debits"][0] == {"kind": TOKEN, "source": owner.address, "amount": 101, "destinationType": "NON_MANAGED", "instrument": bond.address, "position": held.address}
    # The account response shows null: the defaults depend on each position's instrument.
    assert effective_limits(owner, TOKEN) is None and effective_limits(owner, NETWORK_CURRENCY)


@pytest.mark.django_db
def test_token_limits_come_from_the_position_else_the_owner_else_the_defaults(tenant):
    owner_limit = [{"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 10, "durationHours": None}]
    position_limit = [{"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 1000, "durationHours": None}]
    owner = AccountFactory(tenant=tenant, token_debit_limits=owner_limit)
    watched = AccountFactory(tenant=tenant)
    by_owner = position(tenant, owner, FinancialInstrumentFactory(tenant=tenant, decimals=2))
    by_position = position(tenant, owner, FinancialInstrumentFactory(tenant=tenant, decimals=2), token_debit_limits=position_limit)
    assert decide(tenant, owner, 11, watched, kind=TOKEN, position=by_owner).needs_approval  # the owner's 10
    assert not decide(tenant, owner, 500, watched, kind=TOKEN, position=by_position).needs_approval  # the position's 1000
    assert "the position's tokenDebitLimits" in decide(tenant, owner, 1001, watched, kind=TOKEN, position=by_position).reason
    # The owner's array replaced the token defaults entirely: OFF_PLATFORM has no entry left.
    assert not decide(tenant, owner, 10**9, nowhere(), kind=TOKEN, position=by_owner).needs_approval


@pytest.mark.django_db
def test_an_empty_array_means_no_limits_of_that_kind_only(tenant):
    source = AccountFactory(tenant=tenant, network_currency_debit_limits=[])
    off = nowhere()
    assert not decide(tenant, source, 10**6 * SOL, off).needs_approval
    # Configuring network currency leaves the token defaults.
    held = position(tenant, source, FinancialInstrumentFactory(tenant=tenant, decimals=0))
    assert decide(tenant, source, 1, off, kind=TOKEN, position=held).needs_approval


@pytest.mark.django_db
def test_only_wallet_types_have_limits(tenant):
    for kind in ("FEE_PAYER", "OTHER", "TOKEN_MANAGEMENT_AUTHORITY"):
        source = AccountFactory(tenant=tenant, type=kind)
        assert not decide(tenant, source, 10**6 * SOL, nowhere()).needs_approval
    for kind in ("WALLET", "ASSETS_WALLET", "CURRENCIES_WALLET", "DEFI_SETTLEMENT_WALLET"):
        source = AccountFactory(tenant=tenant, type=kind)
        assert decide(tenant, source, 1, nowhere()).needs_approval


@pytest.mark.django_db
def test_debit_api_keys_refuse_unlisted_keys(tenant):
    listed, other = issue_key(tenant, name="treasury-bot"), issue_key(tenant)
    watched = AccountFactory(tenant=tenant)
    source = AccountFactory(tenant=tenant, network_currency_debit_api_keys=[listed.api_key.key_id], token_debit_api_keys=["treasury-bot"])
    assert not decide(tenant, source, 1, watched, api_key=listed.api_key).needs_approval
    with pytest.raises(ForbiddenError) as refused:
        decide(tenant, source, 1, watched, api_key=other.api_key)
    assert (refused.value.code, refused.value.field) == ("DEBIT_NOT_ALLOWED", "itemData.source")
    # Tokens: the owner's list (by key name) and the position's list must both allow it.
    held = position(tenant, source, FinancialInstrumentFactory(tenant=tenant, decimals=0), token_debit_api_keys=[other.api_key.key_id])
    for key in (listed, other):
        with pytest.raises(ForbiddenError):
            decide(tenant, source, 1, watched, kind=TOKEN, position=held, api_key=key.api_key)
    Position.unscoped.filter(pk=held.pk).update(token_debit_api_keys=[listed.api_key.key_id])
    held.refresh_from_db()
    assert not decide(tenant, source, 1, watched, kind=TOKEN, position=held, api_key=listed.api_key).needs_approval


@pytest.mark.django_db
def test_the_duration_window_counts_the_last_hours_per_destination_type_and_instrument(tenant):
    limit = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5 * SOL, "durationHours": 24}]
    source, managed = AccountFactory(tenant=tenant, network_currency_debit_limits=limit), managed_account(tenant)
    entry = {"kind": NETWORK_CURRENCY, "source": source.address, "amount": 3 * SOL, "destinationType": "MANAGED"}
    past_debit(tenant, entry, hours_ago=25)  # outside the window
    past_debit(tenant, {**entry, "destinationType": "NON_MANAGED"}, hours_ago=1)  # another destination type
    past_debit(tenant, entry, hours_ago=2, status=TransactionStatus.FAILED)  # never executed
    past_debit(tenant, {**entry, "kind": TOKEN, "instrument": "x"}, hours_ago=2)  # another kind
    assert not decide(tenant, source, 5 * SOL, managed).needs_approval
    past_debit(tenant, entry, hours_ago=23)
    assert not decide(tenant, source, 2 * SOL, managed).needs_approval
    held = decide(tenant, source, 2 * SOL + 1, managed)
    assert held.needs_approval and "DURATION" in held.reason and "24 hours" in held.reason
    # Held and not yet submitted debits count: they may still execute.
    past_debit(tenant, {**entry, "amount": 2 * SOL}, hours_ago=0, status=TransactionStatus.PENDING_APPROVAL)
    assert decide(tenant, source, 1, managed).needs_approval
    # Funding from the account (seeds, rent) counts for its destination type too.
    funder = AccountFactory(tenant=tenant, network_currency_debit_limits=limit)
    Transaction.unscoped.create(tenant=tenant, cluster=CLUSTER, operation="accounts.create", status=TransactionStatus.CONFIRMED, message=b"", blockhash="x", fee_payer="x",
                                effects={"funding": {"source": funder.address, "lamports": 4 * SOL, "destinationType": "MANAGED"}})
    assert decide(tenant, funder, SOL, managed).needs_approval is False
    assert decide(tenant, funder, SOL + 1, managed).needs_approval


@pytest.mark.django_db
def test_token_windows_are_per_instrument(tenant):
    limit = [{"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 100, "durationHours": 1}]
    owner, watched = AccountFactory(tenant=tenant, token_debit_limits=limit), AccountFactory(tenant=tenant)
    first, second = (position(tenant, owner, FinancialInstrumentFactory(tenant=tenant, decimals=0)) for _ in range(2))
    past_debit(tenant, {"kind": TOKEN, "source": owner.address, "amount": 80, "destinationType": "NON_MANAGED", "instrument": first.instrument.address}, hours_ago=0.5)
    assert decide(tenant, owner, 21, watched, kind=TOKEN, position=first).needs_approval
    assert not decide(tenant, owner, 100, watched, kind=TOKEN, position=second).needs_approval
    past_debit(tenant, {"kind": TOKEN, "source": owner.address, "amount": 80, "destinationType": "NON_MANAGED", "instrument": second.instrument.address}, hours_ago=1.5)
    assert not decide(tenant, owner, 100, watched, kind=TOKEN, position=second).needs_approval  # a 1-hour window


@pytest.mark.django_db
def test_merged_decisions_hold_when_any_debit_is_held(tenant):
    source = AccountFactory(tenant=tenant)
    fine, held = decide(tenant, source, 1, managed_account(tenant)), decide(tenant, source, 1, nowhere())
    merged = Decision.merge(fine, held)
    assert merged.needs_approval and merged.reason == held.reason and len(merged.effects["debits"]) == 2
    assert not Decision.merge(fine, fine).needs_approval
