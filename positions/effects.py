"""What confirmed (or failed) transactions change in position records.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``."""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Account, AccountStatus
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts

from . import operations
from .models import Position, PositionStatus


def _position(tx) -> Position | None:
    return Position.unscoped.filter(offchain_id=tx.effects.get("position")).first()


def _clear_in_flight(tx) -> None:
    Position.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


def positions_created(tx, positions) -> None:
    """PENDING positions whose creating transaction confirmed become ACTIVE (with their
    token account records)."""
    at = tx.confirmed_at or timezone.now()
    for position in positions:
        if position is not None and position.status == PositionStatus.PENDING:
            Position.unscoped.filter(pk=position.pk).update(status=PositionStatus.ACTIVE, last_transaction_at=at)
            Account.unscoped.filter(pk=position.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)


def positions_not_created(tx, positions) -> None:
    """PENDING positions whose creating transaction failed or expired become FAILED."""
    for position in positions:
        if position is not None and position.status == PositionStatus.PENDING:
            Position.unscoped.filter(pk=position.pk).update(status=PositionStatus.FAILED)
            Account.unscoped.filter(pk=position.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)
    _clear_in_flight(tx)


@effect_handler(operations.INITIALIZE)
def position_initialized(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, [_position(tx)])


@failure_handler(operations.INITIALIZE)
def position_initialization_failed(tx) -> None:
    positions_not_created(tx, [_position(tx)])


marks_in_flight(Position)  # their in-flight marks end when the transaction confirms (the engine)


# --- Lifecycle (positions/lifecycle.py): freeze, unfreeze, delegate, inactivate -----------


def _touch(tx, **fields) -> None:
    position = _position(tx)
    if position is not None:
        Position.unscoped.filter(pk=position.pk).update(last_transaction=tx, last_transaction_at=tx.confirmed_at or timezone.now(), **fields)


@effect_handler(operations.FREEZE)
def position_frozen(tx, facts: ConfirmationFacts) -> None:
    _touch(tx, frozen=True)


@effect_handler(operations.UNFREEZE)
def position_unfrozen(tx, facts: ConfirmationFacts) -> None:
    _touch(tx, frozen=False)


_DELEGATE_OPERATIONS = (operations.APPROVE, operations.REVOKE)


@needs_accounts
def delegated_accounts(named) -> dict[int, list[str]]:
    """A delegate change reads its token account back from the chain in the prefetch (no
    network inside the effects' database transaction)."""
    out: dict[int, list[str]] = {}
    for tx, _ in named:
        position = _position(tx) if tx.operation in _DELEGATE_OPERATIONS else None
        if position is not None:
            out[tx.pk] = [position.address]
    return out


def _delegate_on_chain(tx, facts: ConfirmationFacts) -> dict:
    """The token account's delegate as the chain has it after the transaction (the record
    follows the chain); the operation's own view when the account could not be read."""
    from .onchain import token_account_at

    position = _position(tx)
    state = token_account_at(facts.accounts.get(position.address) if position is not None else None)
    if state is not None:
        return {"delegate_address": state.delegate or "", "delegated_amount": state.delegated_amount}
    delegate = tx.effects.get("delegate") or {}
    return {"delegate_address": delegate.get("onchainId") or "", "delegated_amount": int(delegate.get("lamports") or 0)}


@effect_handler(operations.APPROVE)
def position_delegate_approved(tx, facts: ConfirmationFacts) -> None:
    _touch(tx, **_delegate_on_chain(tx, facts))


@effect_handler(operations.REVOKE)
def position_delegate_revoked(tx, facts: ConfirmationFacts) -> None:
    _touch(tx, **_delegate_on_chain(tx, facts))


@effect_handler(operations.INACTIVATE)
def position_inactivated(tx, facts: ConfirmationFacts) -> None:
    """The token account is closed: the position and its account record are INACTIVE
    (initializing the position again reuses both, history kept)."""
    position = _position(tx)
    if position is not None and position.status == PositionStatus.ACTIVE:
        _touch(tx, status=PositionStatus.INACTIVE, frozen=False, delegate_address="", delegated_amount=0)
        Account.unscoped.filter(pk=position.account_id).update(status=AccountStatus.INACTIVE, token_balance=0, lamports_balance=0)


for _operation in (operations.FREEZE, operations.UNFREEZE, operations.APPROVE, operations.REVOKE, operations.INACTIVATE):
    failure_handler(_operation)(_clear_in_flight)
