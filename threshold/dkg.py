"""Distributed key generation and share refresh for FROST(Ed25519, SHA-512).

Key generation is the Pedersen DKG with proofs of knowledge of FROST's KeyGen (Komlo and
Goldberg, "FROST", section 5.1; RFC 9591 leaves key generation to the application and
points there):

Round 1 — participant i draws a polynomial f_i of degree t-1, publishes its Feldman
commitment C_i = (a_i0·B, ..., a_i(t-1)·B) and a Schnorr proof that it knows a_i0 (binds
the commitment to i and to the session, so no one can copy another's key contribution and
no rogue key can cancel the others'), plus a fresh X25519 key for round 2.
Round 2 — i checks every proof (a bad one names its author) and sends each j the share
f_i(j), encrypted and authenticated to j (NaCl ``Box`` under both round-1 X25519 keys), with
a digest of the round-1 packages i saw.
Finish — j decrypts and checks each share against its sender's commitment (Feldman VSS; a
bad share names its sender), checks that every sender saw the same round-1 packages (a relay
that shows participants different packages is caught), and keeps s_j = Σ_i f_i(j). The group
key is Σ_i a_i0·B and each verifying share Y_j = Σ_i f_i(j)·B follows from the commitments.

Refresh (proactive secret sharing) runs the same rounds with polynomials whose constant
term is zero: the group key cannot change, each new share is s_j + Σ_i g_i(j), and shares of
before and after no longer combine. Participants left out of a refresh keep shares that no
longer combine with anyone's: a refresh among a subset removes the others.

A participant accusing a sender can prove it: ``complaint_create`` reveals its round-2
X25519 key of this session (used for nothing else), and anyone holding the round-1
packages decides with ``complaint_check`` whether the accused or the accuser lied.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from nacl.exceptions import CryptoError
from nacl.public import Box, PrivateKey, PublicKey

from . import frost
from . import group as G
from .keys import KeyPackage, PublicKeyPackage

DKG = "dkg"
REFRESH = "refresh"
_SHARE_LABEL = {DKG: b"frost-dkg-share/v1", REFRESH: b"frost-refresh-share/v1"}


class DkgError(ValueError):
    """The protocol must abort; ``culprit`` names the participant at fault when known."""

    def __init__(self, message: str, culprit: int | None = None):
        self.culprit = culprit
        super().__init__(message if culprit is None else f"participant {culprit}: {message}")


@dataclass(frozen=True)
class Round1Package:
    """Broadcast to every participant. ``commitment`` is (a_0·B, ..., a_(t-1)·B) for key
    generation and (a_1·B, ..., a_(t-1)·B) for a refresh (a_0 is zero there);
    ``proof`` (R || μ) only for key generation, ``group_public_key`` only for a refresh."""

    kind: str
    session_id: str
    identifier: int
    threshold: int
    participants: tuple[int, ...]
    commitment: tuple[bytes, ...]
    encryption_key: bytes
    proof: bytes | None = None
    group_public_key: bytes | None = None

    def encode(self) -> bytes:
        """Canonical bytes (for the transcript digest)."""
        parts = [self.kind.encode(), b"\0", self.session_id.encode(), b"\0", G.scalar(self.identifier), G.scalar(self.threshold),
                 len(self.participants).to_bytes(4, "little"), *(G.scalar(p) for p in self.participants),
                 len(self.commitment).to_bytes(4, "little"), *self.commitment, self.encryption_key,
                 self.proof or b"", self.group_public_key or b""]
        return b"".join(parts)


@dataclass(frozen=True)
class Round2Package:
    """Sent to one recipient: its share, encrypted (nonce || ciphertext of NaCl Box)."""

    kind: str
    session_id: str
    sender: int
    recipient: int
    encrypted_share: bytes


@dataclass(frozen=True, repr=False)
class Round1Secret:
    """What a participant keeps between round 1 and round 2 (secret)."""

    package: Round1Package
    coefficients: tuple[bytes, ...]  # a_0 (zero for a refresh) .. a_(t-1)
    encryption_secret: bytes

    def __repr__(self) -> str:
        return f"<{self.package.kind} round-1 state of participant {self.package.identifier}>"

    def __reduce__(self):
        raise TypeError("protocol state cannot be pickled")


@dataclass(frozen=True, repr=False)
class Round2Secret:
    """What a participant keeps between round 2 and the end (secret)."""

    round1: Round1Secret
    received: dict[int, Round1Package] = field(hash=False)  # the others' round-1 packages
    transcript: bytes

    def __repr__(self) -> str:
        return f"<{self.round1.package.kind} round-2 state of participant {self.round1.package.identifier}>"

    def __reduce__(self):
        raise TypeError("protocol state cannot be pickled")


@dataclass(frozen=True)
class Complaint:
    """``accuser`` says the share ``package`` from ``accused`` is wrong, and reveals the
    session's X25519 secret so that anyone can check."""

    session_id: str
    kind: str
    accuser: int
    accused: int
    encryption_secret: bytes
    package: Round2Package


# --- parameters and proofs -----------------------------------------------------------------


def _check_parameters(identifier: int, threshold: int, participants) -> tuple[int, ...]:
    participants = tuple(participants)
    for p in participants:
        frost.check_identifier(p)
    if list(participants) != sorted(set(participants)):
        raise DkgError("the participants must be listed in ascending order, each once")
    if identifier not in participants:
        raise DkgError("the participant is not in the list of participants")
    if not isinstance(threshold, int) or not 2 <= threshold <= len(participants):
        raise DkgError("the threshold must be at least 2 and at most the number of participants")
    return participants


def _hdkg(m: bytes) -> bytes:
    """HDKG(m) = H(contextString || "dkg" || m) mod L: the proof of knowledge's challenge."""
    return G.scalar_sha512(frost.CONTEXT_STRING, b"dkg", m)


def _pok_challenge(identifier: int, verifying_key: bytes, nonce_commitment: bytes, session_id: str) -> bytes:
    # FROST's c_i = H(i, Φ, a_i0·B, R_i) with the session id as the context Φ (every
    # other input has a fixed length, so appending it is unambiguous).
    return _hdkg(G.scalar(identifier) + G.encode_element(verifying_key) + G.encode_element(nonce_commitment) + session_id.encode())


def _prove(identifier: int, secret: bytes, verifying_key: bytes, session_id: str) -> bytes:
    k = G.random_scalar()
    nonce_commitment = G.base_mult(k)
    c = _pok_challenge(identifier, verifying_key, nonce_commitment, session_id)
    return nonce_commitment + G.add(k, G.mul(secret, c))


def verify_proof_of_knowledge(package: Round1Package) -> bool:
    try:
        if package.proof is None or len(package.proof) != 64:
            return False
        nonce_commitment, mu = G.decode_element(package.proof[:32]), G.decode_scalar(package.proof[32:])
        verifying_key = package.commitment[0]
        c = _pok_challenge(package.identifier, verifying_key, nonce_commitment, package.session_id)
        return G.element_sub(G.base_mult(mu), G.mult(c, verifying_key)) == nonce_commitment
    except G.EncodingError:
        return False


def transcript_digest(packages) -> bytes:
    """SHA-256 over every round-1 package in identifier order: equal digests mean equal views."""
    h = hashlib.sha256(frost.CONTEXT_STRING + b"dkg-transcript")
    for package in sorted(packages, key=lambda p: p.identifier):
        encoded = package.encode()
        h.update(len(encoded).to_bytes(4, "little") + encoded)
    return h.digest()


# --- round 1 ------------------------------------------------------------------------------


def round1(*, session_id: str, identifier: int, threshold: int, participants) -> Round1Secret:
    """Key generation, round 1: keep the result secret and broadcast ``result.package``."""
    participants = _check_parameters(identifier, threshold, participants)
    coefficients = tuple(G.random_scalar() for _ in range(threshold))
    commitment = tuple(G.base_mult(a) for a in coefficients)
    encryption = PrivateKey.generate()
    package = Round1Package(DKG, session_id, identifier, threshold, participants, commitment, bytes(encryption.public_key),
                            proof=_prove(identifier, coefficients[0], commitment[0], session_id))
    return Round1Secret(package, coefficients, bytes(encryption))


def refresh_round1(*, session_id: str, key_package: KeyPackage, participants) -> Round1Secret:
    """Refresh, round 1, among ``participants`` (at least the threshold, all holders of the
    same key): the polynomial's constant term is zero, so no proof is needed or sent."""
    threshold = key_package.threshold
    participants = _check_parameters(key_package.identifier, threshold, participants)
    unknown = [p for p in participants if p not in key_package.public.verifying_shares]
    if unknown:
        raise DkgError(f"participants {unknown} hold no share of this key")
    coefficients = (G.ZERO, *(G.random_scalar() for _ in range(threshold - 1)))
    commitment = tuple(G.base_mult(a) for a in coefficients[1:])
    encryption = PrivateKey.generate()
    package = Round1Package(REFRESH, session_id, key_package.identifier, threshold, participants, commitment,
                            bytes(encryption.public_key), group_public_key=key_package.group_public_key)
    return Round1Secret(package, coefficients, bytes(encryption))


# --- round 2 ------------------------------------------------------------------------------


def _check_round1_package(own: Round1Package, package: Round1Package) -> None:
    sender = package.identifier
    if package.kind != own.kind or package.session_id != own.session_id:
        raise DkgError("its round-1 package belongs to another session", sender)
    if package.threshold != own.threshold or package.participants != own.participants:
        raise DkgError("its round-1 package names another threshold or participant list", sender)
    expected = own.threshold if own.kind == DKG else own.threshold - 1
    if len(package.commitment) != expected:
        raise DkgError(f"its commitment has {len(package.commitment)} elements, not {expected}", sender)
    try:
        for element in package.commitment:
            G.decode_element(element)
        PublicKey(package.encryption_key)
    except (G.EncodingError, ValueError, TypeError):
        raise DkgError("its round-1 package holds an invalid element or encryption key", sender)
    if own.kind == DKG and not verify_proof_of_knowledge(package):
        raise DkgError("its proof of knowledge does not verify", sender)
    if own.kind == REFRESH and package.group_public_key != own.group_public_key:
        raise DkgError("it refreshes another group key", sender)


def _share_plaintext(kind: str, sender: int, recipient: int, share: bytes, transcript: bytes) -> bytes:
    return _SHARE_LABEL[kind] + sender.to_bytes(2, "big") + recipient.to_bytes(2, "big") + share + transcript


def round2(secret: Round1Secret, round1_packages) -> tuple[Round2Secret, list[Round2Package]]:
    """Check the others' round-1 packages (a bad one names its author) and make one
    encrypted share per other participant."""
    own = secret.package
    received: dict[int, Round1Package] = {}
    for package in round1_packages:
        if package.identifier == own.identifier:
            if package != own:
                raise DkgError("a round-1 package under this participant's identifier is not its own", own.identifier)
            continue
        if package.identifier not in own.participants:
            raise DkgError("it is not a participant of this session", package.identifier)
        if package.identifier in received and received[package.identifier] != package:
            raise DkgError("it sent two different round-1 packages", package.identifier)
        _check_round1_package(own, package)
        received[package.identifier] = package
    missing = [p for p in own.participants if p != own.identifier and p not in received]
    if missing:
        raise DkgError(f"round-1 packages are missing from participants {missing}", missing[0])
    transcript = transcript_digest([own, *received.values()])
    box_secret = PrivateKey(secret.encryption_secret)
    packages = []
    for recipient, package in sorted(received.items()):
        share = frost.polynomial_evaluate(recipient, list(secret.coefficients))
        box = Box(box_secret, PublicKey(package.encryption_key))
        ciphertext = bytes(box.encrypt(_share_plaintext(own.kind, own.identifier, recipient, share, transcript)))
        packages.append(Round2Package(own.kind, own.session_id, own.identifier, recipient, ciphertext))
    return Round2Secret(secret, received, transcript), packages


# --- finish -------------------------------------------------------------------------------


def _open_share(kind: str, recipient_secret: bytes, sender_package: Round1Package, package: Round2Package) -> tuple[bytes, bytes]:
    """(share, transcript digest) from ``package``; DkgError naming the sender otherwise."""
    sender = package.sender
    try:
        plaintext = Box(PrivateKey(recipient_secret), PublicKey(sender_package.encryption_key)).decrypt(package.encrypted_share)
    except (CryptoError, ValueError, TypeError):
        raise DkgError("its encrypted share does not decrypt", sender)
    label = _SHARE_LABEL[kind]
    expected_length = len(label) + 4 + 32 + 32
    if len(plaintext) != expected_length or plaintext[: len(label)] != label:
        raise DkgError("its decrypted share is malformed", sender)
    body = plaintext[len(label):]
    if int.from_bytes(body[:2], "big") != sender or int.from_bytes(body[2:4], "big") != package.recipient:
        raise DkgError("its share names another sender or recipient", sender)
    try:
        share = G.decode_scalar(body[4:36])
    except G.EncodingError:
        raise DkgError("its share is not a scalar", sender)
    return share, body[36:]


def _vss_image(kind: str, x: int, commitment) -> bytes:
    """f(x)·B from a commitment (a refresh's constant term is zero, so its list starts at a_1)."""
    if kind == DKG:
        return frost.vss_evaluate(x, list(commitment))
    return frost.vss_evaluate(x, [G.IDENTITY, *commitment])


def _collect_shares(state: Round2Secret, round2_packages) -> dict[int, bytes]:
    own = state.round1.package
    shares: dict[int, bytes] = {}
    for package in round2_packages:
        if package.recipient != own.identifier:
            continue  # addressed to someone else: a relay may hand every participant the whole set
        sender = package.sender
        if package.kind != own.kind or package.session_id != own.session_id:
            raise DkgError("its round-2 package belongs to another session", sender)
        if sender not in state.received:
            raise DkgError("it is not a participant of this session", sender)
        share, transcript = _open_share(own.kind, state.round1.encryption_secret, state.received[sender], package)
        if sender in shares and shares[sender] != share:
            raise DkgError("it sent two different shares", sender)
        if transcript != state.transcript:
            raise DkgError("it saw different round-1 packages than this participant (inconsistent broadcast)", sender)
        if G.base_mult(share) != _vss_image(own.kind, own.identifier, state.received[sender].commitment):
            raise DkgError("its share does not match its commitment", sender)
        shares[sender] = share
    missing = [p for p in state.received if p not in shares]
    if missing:
        raise DkgError(f"shares are missing from participants {missing}", missing[0])
    shares[own.identifier] = frost.polynomial_evaluate(own.identifier, list(state.round1.coefficients))
    return shares


def _summed_commitment(state: Round2Secret) -> list[bytes]:
    """Σ_i C_i coefficient by coefficient (a refresh's with its zero constant term first)."""
    own = state.round1.package
    commitments = [own.commitment, *(p.commitment for p in state.received.values())]
    summed = [G.element_sum(c[k] for c in commitments) for k in range(len(own.commitment))]
    return summed if own.kind == DKG else [G.IDENTITY, *summed]


def finish(state: Round2Secret, round2_packages) -> KeyPackage:
    """Key generation, end: this participant's key package (checked) or DkgError."""
    own = state.round1.package
    if own.kind != DKG:
        raise DkgError("this is refresh state; use refresh_finish")
    shares = _collect_shares(state, round2_packages)
    summed = _summed_commitment(state)
    verifying = {j: frost.vss_evaluate(j, summed) for j in own.participants}
    public = PublicKeyPackage(own.threshold, G.encode_element(summed[0]), verifying)
    return KeyPackage(own.identifier, G.scalar_sum(shares.values()), public).check()


def refresh_finish(state: Round2Secret, round2_packages, key_package: KeyPackage) -> KeyPackage:
    """Refresh, end: the new key package for the same group key (only the participants of
    the refresh are in it)."""
    own = state.round1.package
    if own.kind != REFRESH or own.group_public_key != key_package.group_public_key or own.identifier != key_package.identifier:
        raise DkgError("this refresh state is not for this key package")
    shares = _collect_shares(state, round2_packages)
    summed = _summed_commitment(state)
    old = key_package.public.verifying_shares
    verifying = {j: G.element_add(old[j], frost.vss_evaluate(j, summed)) for j in own.participants}
    public = PublicKeyPackage(own.threshold, key_package.group_public_key, verifying)
    signing_share = G.add(key_package.signing_share, G.scalar_sum(shares.values()))
    return KeyPackage(own.identifier, signing_share, public).check()


# --- complaints ---------------------------------------------------------------------------


def complaint_create(state: Round2Secret, package: Round2Package) -> Complaint:
    own = state.round1.package
    if package.recipient != own.identifier:
        raise DkgError("a complaint is about a package addressed to the complaining participant")
    return Complaint(own.session_id, own.kind, own.identifier, package.sender, state.round1.encryption_secret, package)


def complaint_check(complaint: Complaint, round1_packages) -> int:
    """The participant at fault: the accused if its share is wrong (or the complaint
    cannot be disproved with its package), the accuser if the share was right or the
    revealed key is not its own."""
    packages = {p.identifier: p for p in round1_packages}
    accuser, accused = packages.get(complaint.accuser), packages.get(complaint.accused)
    if accuser is None or accused is None:
        raise DkgError("the complaint names a participant without a round-1 package")
    package = complaint.package
    if package.sender != complaint.accused or package.recipient != complaint.accuser or package.session_id != complaint.session_id:
        return complaint.accuser
    try:
        if bytes(PrivateKey(complaint.encryption_secret).public_key) != accuser.encryption_key:
            return complaint.accuser
    except (ValueError, TypeError):
        return complaint.accuser
    try:
        share, transcript = _open_share(complaint.kind, complaint.encryption_secret, accused, package)
    except DkgError:
        return complaint.accused
    if transcript != transcript_digest(packages.values()):
        return complaint.accused
    if G.base_mult(share) != _vss_image(complaint.kind, complaint.accuser, accused.commitment):
        return complaint.accused
    return complaint.accuser


# --- trusted dealer (RFC 9591 appendix C), for tests and benchmarks only --------------------


def trusted_dealer_keygen(secret_key: bytes, participants, threshold: int, coefficients=None) -> dict[int, KeyPackage]:
    """Shares of ``secret_key`` dealt by one party that knows it. The service never uses
    this (no one may hold a DKG account's key); it reproduces the RFC's test vectors."""
    participants = _check_parameters(participants[0], threshold, participants)
    coefficients = [secret_key, *(coefficients if coefficients is not None else [G.random_scalar() for _ in range(threshold - 1)])]
    commitment = [G.base_mult(a) for a in coefficients]
    public = PublicKeyPackage(threshold, commitment[0], {j: frost.vss_evaluate(j, commitment) for j in participants})
    return {j: KeyPackage(j, frost.polynomial_evaluate(j, coefficients), public).check() for j in participants}

