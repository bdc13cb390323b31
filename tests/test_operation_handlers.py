"""Operations and their handlers (docs/architecture.md, "Where a confirmation goes"): every
operation whose confirmation a handler applies also has a failure handler, and every
handler of the positions area is registered under one of the area's operation names
(positions/operations.py: the builders and the handlers share those constants)."""

from __future__ import annotations

from positions import operations
from transactions import effects


def test_every_operation_with_effects_undoes_them_when_it_does_not_land():
    assert set(effects._HANDLERS) <= set(effects._FAILURE_HANDLERS), sorted(set(effects._HANDLERS) - set(effects._FAILURE_HANDLERS))


def test_every_positions_handler_is_registered_under_one_of_the_areas_constants():
    named = {value for name, value in vars(operations).items() if name.isupper() and isinstance(value, str)}
    registered = {v for v in set(effects._HANDLERS) | set(effects._FAILURE_HANDLERS) if v.startswith("positions.")}
    # positions.transfer_network_currency changes nothing offchain beyond the balance hooks: no handler
    assert registered == named - {operations.TRANSFER_NETWORK_CURRENCY}
    assert set(operations.OF_MOVEMENT.values()) <= set(effects._HANDLERS)
