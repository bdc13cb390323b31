"""What confirmed (or failed) transactions change in position records.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``."""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Account, AccountStatus
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, on_every_confirmation

from .models import Position, PositionStatus


def _position(tx) -> Position | None:
    return Position.unscoped.filter(offchain_id=tx.effects.get("position")).first()


def _clear_in_flight(tx) -> None:
    Position.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@effect_handler("positions.initialize")
def position_initialized(tx, facts: ConfirmationFacts) -> None:
    position = _position(tx)
    if position is not None and position.status == PositionStatus.PENDING:
        at = tx.confirmed_at or timezone.now()
        Position.unscoped.filter(pk=position.pk).update(status=PositionStatus.ACTIVE, last_transaction_at=at)
        Account.unscoped.filter(pk=position.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)


@failure_handler("positions.initialize")
def position_initialization_failed(tx) -> None:
    position = _position(tx)
    if position is not None and position.status == PositionStatus.PENDING:
        Position.unscoped.filter(pk=position.pk).update(status=PositionStatus.FAILED)
        Account.unscoped.filter(pk=position.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)
    _clear_in_flight(tx)


@on_every_confirmation
def in_flight_ended(tx, facts: ConfirmationFacts) -> None:
    _clear_in_flight(tx)
