"""Pieces the key-generation and signing services share: who may speak for an external
player, sealed key packages of backend players, JSON messages at the API's edge, and the
worker kicks that follow a commit."""

from __future__ import annotations

import json
import logging

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from custody.errors import CustodyError
from ledger_project.api.errors import ForbiddenError, LedgerError
from tenancy.roles import api_key_may_debit

from threshold import messages as M
from threshold.keys import KeyPackage
from . import keyring

logger = logging.getLogger("ledger.accounts.mpc")


def json_safe(data):
    """A validated body as the JSON column stores it (UUIDs, dates and Decimals as text)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def player_may_speak(allowed: list[str] | None, api_key, code: str, *, field: str) -> None:
    """An external player bound to API keys (``session.externalPlayers[].apiKeys``) speaks
    only through them (by key id or name, as debit API keys are matched); unbound, any key
    of the organization may relay its messages — they are checked cryptographically anyway."""
    if not api_key_may_debit(allowed, api_key):
        raise ForbiddenError(f"This API key may not speak for player {code}: its apiKeys do not name it.", field=field, code="PLAYER_NOT_ALLOWED")


def parse(message, expect, *, field: str):
    """A FROST JSON message of the API, checked (threshold/messages.py); 400
    INVALID_MESSAGE naming the offending field of it otherwise."""
    try:
        return M.from_json(message, expect)
    except M.MessageError as exc:
        raise LedgerError(f"Not a valid {expect if isinstance(expect, str) else ' or '.join(expect)} message: {exc}.",
                          field=f"{field}.{exc.field}" if exc.field else field, code="INVALID_MESSAGE")


def invalid(message: str, *, field: str) -> LedgerError:
    return LedgerError(message, field=field, code="INVALID_MESSAGE")


def seal_key_package(code: str, key: KeyPackage, purpose: str) -> dict:
    return keyring.seal(code, json.dumps(M.to_json(key)).encode(), purpose)


def unseal_key_package(code: str, sealed: dict, purpose: str, *, verifying_share: str | None = None) -> KeyPackage:
    """A backend player's key package; its share must still match the recorded verifying
    share (s·B = Y), so a ciphertext that opened but holds another share is refused."""
    try:
        key = M.from_json(json.loads(keyring.unseal(code, sealed, purpose)), "frost-key-package")
    except (M.MessageError, ValueError) as exc:
        raise CustodyError(f"The stored share of backend player {code} is unreadable ({exc}).")
    if verifying_share is not None and key.verifying_share.hex() != verifying_share:
        raise CustodyError(f"The stored share of backend player {code} does not match its verifying share.")
    return key


def kick(task, **kwargs) -> None:
    """Run ``task`` in the worker once the current transaction commits. A broker outage
    must not fail the request that committed: the sweep (``ledger.accounts.mpc_sweep``,
    beat and worker start) resumes every session with backend work left."""

    def send() -> None:
        try:
            task.delay(**kwargs)
        except Exception:  # noqa: BLE001 - any broker/transport failure
            logger.warning("could not queue %s; the sweep will", task.name, exc_info=True)

    transaction.on_commit(send)
