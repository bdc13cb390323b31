"""Worker tasks of the accounts area: the backend players of threshold keys
(accounts/mpc). Thin: each calls one service; every step of it commits on its own, so a
task killed anywhere is simply run again (by a kick, the beat sweep or a worker starting)."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from .mpc import keygen, sessions


@shared_task(name="ledger.accounts.mpc_keygen_advance", acks_late=True)
def mpc_keygen_advance(*, session_pk: int) -> str:
    return keygen.keygen_advance(session_pk=session_pk)


@shared_task(name="ledger.accounts.mpc_signing_advance", acks_late=True)
def mpc_signing_advance(*, session_pk: int) -> str:
    return sessions.signing_advance(session_pk=session_pk)


@shared_task(name="ledger.accounts.mpc_sweep", acks_late=True)
def mpc_sweep(*, quiet_seconds: float = 2.0) -> dict:
    found = sessions.sessions_sweep(quiet_seconds=quiet_seconds)
    for pk in found["signing"]:
        mpc_signing_advance.delay(session_pk=pk)
    for pk in found["keygen"]:
        mpc_keygen_advance.delay(session_pk=pk)
    return found


@worker_ready.connect
def _resume_sessions_on_start(sender=None, **kwargs) -> None:
    # A restarted worker resumes the backend players' work its killed predecessor left.
    mpc_sweep.delay(quiet_seconds=0)
