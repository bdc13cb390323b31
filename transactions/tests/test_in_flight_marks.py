"""Every record that marks an operation in flight (``pending_transaction``) is registered with
the engine, which ends the marks of the transactions that confirm (transactions/effects.py,
``marks_in_flight``): no area keeps a copy of that hook of its own."""

from __future__ import annotations

from django.apps import apps

from transactions import effects


def test_every_model_with_an_in_flight_mark_is_registered_once():
    marked = {m for m in apps.get_models() if any(f.name == "pending_transaction" for f in m._meta.get_fields())}
    assert marked and set(effects._IN_FLIGHT_MARKED) == marked
    assert len(effects._IN_FLIGHT_MARKED) == len(marked)
