"""Signatures: the Signer protocol, signing a message, and checking supplied signatures."""

from __future__ import annotations

from typing import Iterable, Protocol

from solders.pubkey import Pubkey
from solders.signature import Signature


class Signer(Protocol):
    def pubkey(self) -> Pubkey: ...

    def sign_message(self, message: bytes) -> Signature: ...


def sign_all(message: bytes, signers: Iterable[Signer]) -> dict[str, str]:
    return {str(s.pubkey()): str(s.sign_message(message)) for s in signers}


def signature_valid(pubkey: str, message: bytes, signature: str) -> bool:
    try:
        return Signature.from_string(signature).verify(Pubkey.from_string(pubkey), message)
    except ValueError:
        return False
