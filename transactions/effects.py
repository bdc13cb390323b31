"""Offchain effects of operations, applied once when their transaction settles.

Each area registers, per operation name, a handler for success and optionally one for
failure (FAILED or EXPIRED) in its own ``effects`` module (imported by its
AppConfig.ready); ``on_every_confirmation`` hooks run for every confirmed transaction
(e.g. balance history). The engine calls them inside the database transaction that claims
``effects_applied_at``, so each runs exactly once per transaction.
"""

from __future__ import annotations

from typing import Callable

_HANDLERS: dict[str, Callable] = {}
_FAILURE_HANDLERS: dict[str, Callable] = {}
_EVERY: list[Callable] = []


def _register(table: dict, operation: str):
    def register(fn: Callable) -> Callable:
        if table.get(operation, fn) is not fn:
            raise RuntimeError(f"two effect handlers for {operation}")
        table[operation] = fn
        return fn

    return register


def effect_handler(operation: str):
    return _register(_HANDLERS, operation)


def failure_handler(operation: str):
    return _register(_FAILURE_HANDLERS, operation)


def on_every_confirmation(fn: Callable) -> Callable:
    if fn not in _EVERY:
        _EVERY.append(fn)
    return fn


def touched_addresses(tx) -> list[str]:
    """The addresses a transaction's message names, parsed once per transaction however
    many confirmation hooks ask."""
    cached = getattr(tx, "_touched_addresses", None)
    if cached is None:
        from .chain.builder import message_from_bytes

        cached = tx._touched_addresses = [str(k) for k in message_from_bytes(bytes(tx.message)).account_keys]
    return cached


def apply(tx) -> None:
    handler = _HANDLERS.get(tx.operation)
    if handler is not None:
        handler(tx)
    for hook in _EVERY:
        hook(tx)


def apply_failure(tx) -> None:
    handler = _FAILURE_HANDLERS.get(tx.operation)
    if handler is not None:
        handler(tx)
