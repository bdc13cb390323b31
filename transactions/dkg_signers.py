"""Threshold (DKG) signers as the engine knows them: the accounts area registers its
``DkgSigner`` (accounts/mpc/sessions.py, through accounts/apps.py), and Sign Transaction,
Withdraw Transaction and settlement ask it through these functions; with none registered
no threshold session can exist."""

from __future__ import annotations

from typing import Protocol

from .models import Transaction


class DkgSigner(Protocol):
    """Threshold signing of ``offPlatformSigning[].dkgSigning`` (the accounts area's
    accounts/mpc/sessions.py registers it): ``check`` verifies each partial signature in the
    read phase (400 naming the player of a bad one) and returns what to store, or None when
    the session completed already; ``record`` stores it in the write phase and returns
    (signer address, aggregated signature) once the session has every share."""

    def check(self, *, tenant, cluster: str, api_key, transaction: Transaction, entry: dict, field: str): ...

    def record(self, contribution) -> tuple[str, str] | None: ...

    def service_only(self, *, transaction: Transaction) -> list[str]:
        """``transaction``'s missing signers whose signature only the service's own players
        can make (so none exists once it stops signing for it)."""
        ...

    def end_sessions(self, *, transaction: Transaction, why: str) -> int:
        """CANCEL every open signing session of ``transaction`` (it stopped waiting for
        signatures: withdrawn), in the caller's database transaction, under the sessions'
        row locks; returns how many."""
        ...


_dkg_signer: DkgSigner | None = None


def register_dkg_signer(signer: DkgSigner) -> None:
    global _dkg_signer
    _dkg_signer = signer


def dkg_signer() -> DkgSigner:
    if _dkg_signer is None:  # pragma: no cover - the accounts app registers it at start
        raise RuntimeError("No DkgSigner is registered (accounts/apps.py registers it).")
    return _dkg_signer


def dkg_sessions_end(*, transaction: Transaction, why: str) -> int:
    """End ``transaction``'s open threshold signing sessions (Withdraw Transaction); 0 when
    no DKG signer is registered (nothing could have opened one)."""
    return _dkg_signer.end_sessions(transaction=transaction, why=why) if _dkg_signer is not None else 0


def dkg_signers_service_only(*, transaction: Transaction) -> list[str]:
    """Missing signers of ``transaction`` no one outside the service can sign for (DKG
    accounts whose backend players are needed); [] when no DKG signer is registered."""
    return _dkg_signer.service_only(transaction=transaction) if _dkg_signer is not None else []


def dkg_signing_record(contributions: list) -> dict[str, str]:
    """Write phase: store the verified partial signatures; the aggregated signatures of the
    sessions they complete, to add with the others."""
    signatures: dict[str, str] = {}
    for contribution in contributions:
        done = _dkg_signer.record(contribution)
        if done is not None:
            signatures.setdefault(*done)
    return signatures
