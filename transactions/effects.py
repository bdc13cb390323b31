"""Offchain effects of operations, applied once when their transaction is confirmed.

Each area registers a handler per operation name in its own ``effects`` module (imported
by its AppConfig.ready). ``transactions.services.transaction_apply_effects`` calls the
handler inside the same database transaction that claims ``effects_applied_at``, so an
effect is applied exactly once however often confirmation runs.
"""

from __future__ import annotations

from typing import Callable

_HANDLERS: dict[str, Callable] = {}


def effect_handler(operation: str):
    def register(fn: Callable) -> Callable:
        if operation in _HANDLERS and _HANDLERS[operation] is not fn:
            raise RuntimeError(f"two effect handlers for {operation}")
        _HANDLERS[operation] = fn
        return fn

    return register


def apply(tx) -> None:
    handler = _HANDLERS.get(tx.operation)
    if handler is not None:
        handler(tx)


def registered() -> frozenset[str]:
    return frozenset(_HANDLERS)
