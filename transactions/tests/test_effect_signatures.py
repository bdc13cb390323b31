"""Every registered effect handler takes what the engine passes: a handler with the wrong
signature fails only inside the worker (the confirm task errors and retries, and the
transaction stays SUBMITTED), so it is caught here, at import."""

from __future__ import annotations

import inspect

from transactions import effects


def _positional(fn) -> int:
    return sum(1 for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def test_success_handlers_and_hooks_take_the_transaction_and_its_facts():
    wrong = [f"{fn.__module__}.{fn.__name__}" for fn in [*effects._HANDLERS.values(), *effects._EVERY] if _positional(fn) != 2]
    assert not wrong, f"handlers must be fn(tx, facts): {wrong}"


def test_failure_handlers_take_the_transaction_only():
    wrong = [f"{fn.__module__}.{fn.__name__}" for fn in effects._FAILURE_HANDLERS.values() if _positional(fn) != 1]
    assert not wrong, f"failure handlers must be fn(tx): {wrong}"


def test_account_needs_take_the_transactions_and_their_addresses():
    wrong = [f"{fn.__module__}.{fn.__name__}" for fn in effects._ACCOUNTS_NEEDED if _positional(fn) != 1]
    assert not wrong, f"needs_accounts hooks must be fn(named): {wrong}"


def test_batch_hooks_take_the_transactions():
    wrong = [f"{fn.__module__}.{fn.__name__}" for fn in [*effects._BATCH, *effects._LOCK_FIRST] if _positional(fn) != 1]
    assert not wrong, f"on_confirmations hooks must be fn(txs): {wrong}"
