"""What confirmed (or failed) transactions change in position records.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``."""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Account, AccountStatus
from transactions.effects import effect_handler, failure_handler, on_every_confirmation

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


@effect_handler("positions.initialize")
def position_initialized(tx) -> None:
    positions_created(tx, [_position(tx)])


@failure_handler("positions.initialize")
def position_initialization_failed(tx) -> None:
    positions_not_created(tx, [_position(tx)])


@on_every_confirmation
def in_flight_ended(tx) -> None:
    _clear_in_flight(tx)
