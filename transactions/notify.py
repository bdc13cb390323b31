"""The engine's moments that others record in the same database transaction.

A transaction becomes due for submission (``PRE_SUBMIT``: built and signed, before any node
sees it) and is handed to the network, lands or ends (``POST_SUBMIT``). The engine calls
``transactions_reached`` inside the ``atomic()`` block that made the change, so whatever a
listener writes exists if and only if the change committed. The webhooks app listens
(webhooks/apps.py → webhooks/outbox.py ``transaction_events``): the engine stands below it
and names no webhook.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Sequence

#: the moments, named as the webhook event types that report them (docs/webhooks.md)
PRE_SUBMIT = "transaction.pre_submit"
POST_SUBMIT = "transaction.post_submit"
#: signed again on a fresh blockhash after the last one expired unlanded (transactions/resign.py);
#: each transaction given carries ``previous_onchain_id``, the signature it replaced
RESIGNED = "transaction.resigned"

_Listener = Callable[..., object]
_listeners: list[_Listener] = []


def register_transaction_listener(listener: _Listener) -> None:
    """``listener(txs, moment, now=...)``, called in the engine's database transaction."""
    if listener not in _listeners:
        _listeners.append(listener)


def transactions_reached(txs: Sequence, moment: str, *, now: datetime | None = None) -> None:
    if not txs:
        return
    for listener in _listeners:
        listener(txs, moment, now=now)
