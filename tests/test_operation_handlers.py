"""Operations and their handlers (docs/architecture.md, "Where a confirmation goes"): each
area names its operations in its ``operations.py``, the builders and the handlers use those
constants, every handler is registered under one of them, and every operation has a success
and a failure handler unless its module says, with the reason, why it needs none."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.test_house import MODULES, ROOT
from transactions import effects

AREAS = ("accounts", "instruments", "positions", "loans", "marketdata", "vaults", "lookup_tables")


def _module(area: str):
    return importlib.import_module(f"{area}.operations")


def _names(area: str) -> set[str]:
    return {value for name, value in vars(_module(area)).items() if name.isupper() and isinstance(value, str)}


def _exempt(area: str, *lists: str) -> set[str]:
    module = _module(area)
    return {name for attribute in lists for name in getattr(module, attribute, ())}


def test_every_registered_handler_is_under_an_areas_operation_name():
    named = set().union(*(_names(area) for area in AREAS))
    registered = set(effects._HANDLERS) | set(effects._FAILURE_HANDLERS)
    assert registered <= named, sorted(registered - named)


@pytest.mark.parametrize("area", AREAS)
def test_every_operation_has_its_success_and_failure_handlers(area):
    names = _names(area)
    assert names, f"{area}/operations.py names no operation"
    without_success = names - set(effects._HANDLERS) - _exempt(area, "ON_CHAIN_ONLY", "BALANCES_ONLY")
    without_failure = names - set(effects._FAILURE_HANDLERS) - _exempt(area, "NOTHING_TO_UNDO")
    assert not without_success, f"no effect_handler for {sorted(without_success)}"
    assert not without_failure, f"no failure_handler for {sorted(without_failure)}"


def test_movement_kinds_map_to_operations_with_handlers():
    from positions import operations

    assert set(operations.OF_MOVEMENT.values()) <= set(effects._HANDLERS)


def test_no_product_code_spells_an_operation_name_outside_its_operations_module():
    """``grep operations.TRANSFER`` finds the builder and the handler: no other file writes
    the name as a string."""
    names = set().union(*(_names(area) for area in AREAS))
    spelled = re.compile(r"[\"'](" + "|".join(re.escape(n) for n in sorted(names)) + r")[\"']")
    offenders = []
    for path in MODULES.values():  # the product's files (tests/test_house.py reads the same)
        relative = path.relative_to(ROOT)
        if path.name == "operations.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if spelled.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
