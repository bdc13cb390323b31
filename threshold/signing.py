"""A FROST signing session's messages around RFC 9591's functions.

A session (``session_id``) signs one message with the commitments of the participants the
coordinator chose: each participant commits (round one), the coordinator sends every
participant the same ``SigningPackage`` (message + sorted commitments), each answers with a
``SignatureShare`` (round two), and the coordinator verifies every share on arrival and
aggregates them into one Ed25519 signature.

``package_digest`` is what a participant's nonces are consumed for: the nonce store records
it with the share, so answering the same package again (a retry after a crash) returns the
same share, and any other package is refused — a nonce never signs two different inputs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from . import frost
from .keys import KeyPackage, PublicKeyPackage


@dataclass(frozen=True)
class SigningCommitment:
    session_id: str
    commitment: frost.Commitment


@dataclass(frozen=True)
class SigningPackage:
    session_id: str
    group_public_key: bytes
    message: bytes
    commitments: tuple[frost.Commitment, ...]

    @property
    def participants(self) -> list[int]:
        return [c.identifier for c in self.commitments]


@dataclass(frozen=True)
class SignatureShare:
    session_id: str
    identifier: int
    share: bytes


@dataclass(frozen=True)
class Signature:
    session_id: str
    group_public_key: bytes
    signature: bytes


@dataclass(frozen=True, repr=False)
class SessionNonces:
    """A participant's nonces for one session (secret; stored between the rounds)."""

    session_id: str
    nonces: frost.SigningNonces

    def __repr__(self) -> str:
        return f"<nonces of participant {self.nonces.commitment.identifier} for session {self.session_id}>"

    def __reduce__(self):
        raise TypeError("signing nonces cannot be pickled")


def commit(key: KeyPackage, session_id: str) -> SessionNonces:
    return SessionNonces(session_id, frost.commit(key.identifier, key.signing_share))


def signing_package(session_id: str, public: PublicKeyPackage, message: bytes, commitments) -> SigningPackage:
    """The coordinator's round-two input: at least ``threshold`` commitments of known
    participants of this session, sorted by identifier."""
    commitments = sorted(commitments, key=lambda c: c.commitment.identifier)
    if any(c.session_id != session_id for c in commitments):
        raise frost.FrostError("a commitment belongs to another signing session")
    package = SigningPackage(session_id, public.group_public_key, bytes(message), tuple(c.commitment for c in commitments))
    check_package(package, public)
    return package


def check_package(package: SigningPackage, public: PublicKeyPackage) -> None:
    frost.check_commitment_list(package.commitments)
    if package.group_public_key != public.group_public_key:
        raise frost.FrostError("the signing package is for another group key")
    unknown = [i for i in package.participants if i not in public.verifying_shares]
    if unknown:
        raise frost.FrostError(f"participants {unknown} hold no share of this key")
    if len(package.commitments) < public.threshold:
        raise frost.FrostError(f"a signature needs {public.threshold} participants, the package has {len(package.commitments)}")


def package_digest(package: SigningPackage) -> bytes:
    """SHA-256 of everything a signature share depends on (session, key, message, commitments)."""
    h = hashlib.sha256(frost.CONTEXT_STRING + b"signing-package")
    session = package.session_id.encode()
    h.update(len(session).to_bytes(4, "little") + session + package.group_public_key)
    h.update(len(package.message).to_bytes(8, "little") + package.message)
    h.update(frost.encode_group_commitment_list(list(package.commitments)))
    return h.digest()


def sign(key: KeyPackage, nonces: SessionNonces, package: SigningPackage) -> SignatureShare:
    """Round two for ``key``'s participant. The caller destroys ``nonces`` (or records them
    consumed for ``package_digest(package)``) before it releases the share."""
    if nonces.session_id != package.session_id:
        raise frost.FrostError("these nonces belong to another signing session")
    check_package(package, key.public)
    share = frost.sign(key.identifier, key.signing_share, key.group_public_key, nonces.nonces, package.message, package.commitments)
    return SignatureShare(package.session_id, key.identifier, share)


def verify_share(public: PublicKeyPackage, package: SigningPackage, share: SignatureShare) -> bool:
    """Whether one participant's share is valid: checked on arrival, before aggregation."""
    if share.session_id != package.session_id or share.identifier not in package.participants:
        return False
    return frost.verify_signature_share(share.identifier, public.verifying_shares[share.identifier], share.share,
                                        package.commitments, package.group_public_key, package.message)


def aggregate(public: PublicKeyPackage, package: SigningPackage, shares) -> Signature:
    """The Ed25519 signature, or ``frost.InvalidSignatureShare`` naming the bad shares' players."""
    check_package(package, public)
    by_id: dict[int, bytes] = {}
    for share in shares:
        if share.session_id != package.session_id:
            raise frost.InvalidSignatureShare([share.identifier], f"the share of participant {share.identifier} belongs to another session")
        if share.identifier in by_id and by_id[share.identifier] != share.share:
            raise frost.InvalidSignatureShare([share.identifier], f"participant {share.identifier} sent two different shares")
        by_id[share.identifier] = share.share
    missing = [i for i in package.participants if i not in by_id]
    if missing:
        raise frost.FrostError(f"signature shares are missing from participants {missing}")
    extra = [i for i in by_id if i not in package.participants]
    if extra:
        raise frost.FrostError(f"participants {extra} are not in the signing package")
    signature = frost.aggregate(package.commitments, package.message, package.group_public_key, by_id, public.verifying_shares)
    return Signature(package.session_id, package.group_public_key, signature)

