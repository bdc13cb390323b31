"""Whether an instrument's tokens and a position can move now: the checks every movement
makes in its read phase (positions/movement.py, batches, loans, vaults)."""

from __future__ import annotations

from instruments.models import FinancialInstrument
from ledger_project.api.errors import LedgerError

from .models import Position, PositionStatus
from .services import usable_instrument


def movable_instrument(instrument: FinancialInstrument, field: str) -> FinancialInstrument:
    """An instrument whose tokens can move through this service (docs/positions.md)."""
    usable_instrument(instrument, field)
    if "CONFIDENTIAL_MINT_BURN" in (instrument.extensions or []):
        raise LedgerError(
            "This instrument has Confidential Mint and Burn: its mints, burns and transfers need zero-knowledge proofs "
            "(and the holders' ElGamal keys), which this service cannot produce. Move it with a wallet that builds the proofs; "
            "the service does not fall back to a non-confidential movement.",
            field=field, code="CONFIDENTIAL_PROOFS_REQUIRED",
        )
    if instrument.paused:
        raise LedgerError("The financial instrument is paused: the token program refuses its mints, burns and transfers until it is unpaused.", field=field, code="INSTRUMENT_PAUSED")
    return instrument


_NOT_LIVE = {
    PositionStatus.PENDING: ("POSITION_PENDING", "The position's initialization has not been confirmed yet"),
    PositionStatus.FAILED: ("POSITION_NOT_ONCHAIN", "The position's initialization failed: it does not exist on the network"),
    PositionStatus.INACTIVE: ("POSITION_INACTIVE", "The position is inactive: its token account is closed"),
}


def live_position(position: Position, field: str, role: str) -> Position:
    """A position that can send or receive (``role``): ACTIVE and not frozen."""
    if position.status in _NOT_LIVE:
        code, text = _NOT_LIVE[position.status]
        raise LedgerError(f"{text}; it can neither send nor receive.", field=field, code=code)
    if position.frozen:
        raise LedgerError(f"The position is frozen: it cannot {role} until it is unfrozen.", field=field, code="POSITION_FROZEN")
    return position
