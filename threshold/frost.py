"""FROST(Ed25519, SHA-512) as RFC 9591 specifies it (sections 4, 5 and 6.1).

Two-round threshold Schnorr signing whose output is a standard RFC 8032 Ed25519 signature:
any Solana node, solders or libsodium verifies it against the group public key like a
signature made by one key. Function names and argument order follow the RFC's pseudocode
so the two read side by side; group and scalar arithmetic is libsodium's (``group``).

Identifiers are integers 1..65535 (the RFC allows any non-zero scalar; this service numbers
its players). A commitment list is sorted by identifier and holds each identifier once.
Nothing here keeps state: a participant stores the nonces of round one itself and must
use them for one signing package only (``threshold.player`` and the backend's
nonce store make that crash-safe, docs/threshold-signing.md).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from . import group as G

CONTEXT_STRING = b"FROST-ED25519-SHA512-v1"
MAX_IDENTIFIER = 65535


class FrostError(ValueError):
    """Invalid protocol input (the RFC's "invalid parameters" / aborts)."""


class InvalidSignatureShare(FrostError):
    """One or more signature shares do not verify; ``culprits`` names their participants."""

    def __init__(self, culprits, message: str | None = None):
        self.culprits = tuple(sorted(culprits))
        names = ", ".join(str(c) for c in self.culprits)
        super().__init__(message or f"invalid signature share from participant {names}")


# --- the ciphersuite's hash functions (RFC 9591 section 6.1) ------------------------------


def H1(m: bytes) -> bytes:
    return G.scalar_sha512(CONTEXT_STRING, b"rho", m)


def H2(m: bytes) -> bytes:
    # No domain separator, for compatibility with RFC 8032: this is Ed25519's challenge.
    return G.scalar_sha512(m)


def H3(m: bytes) -> bytes:
    return G.scalar_sha512(CONTEXT_STRING, b"nonce", m)


def H4(m: bytes) -> bytes:
    return hashlib.sha512(CONTEXT_STRING + b"msg" + m).digest()


def H5(m: bytes) -> bytes:
    return hashlib.sha512(CONTEXT_STRING + b"com" + m).digest()


# --- values -------------------------------------------------------------------------------


def check_identifier(identifier: int) -> int:
    if not isinstance(identifier, int) or isinstance(identifier, bool) or not 1 <= identifier <= MAX_IDENTIFIER:
        raise FrostError(f"an identifier is an integer from 1 to {MAX_IDENTIFIER}")
    return identifier


@dataclass(frozen=True)
class Commitment:
    """A participant's public round-one output: (i, hiding_nonce_commitment_i, binding_nonce_commitment_i)."""

    identifier: int
    hiding: bytes
    binding: bytes

    def __post_init__(self):
        # Validated once, when made (DeserializeElement's checks): the commitment lists
        # built from it are then checked for order and uniqueness only.
        check_identifier(self.identifier)
        G.decode_element(self.hiding)
        G.decode_element(self.binding)


@dataclass(frozen=True, repr=False)
class SigningNonces:
    """A participant's secret round-one output with its commitment. Used for one
    signing package, then destroyed."""

    hiding: bytes
    binding: bytes
    commitment: Commitment

    def __repr__(self) -> str:
        return f"<signing nonces of participant {self.commitment.identifier}>"

    def __reduce__(self):
        raise TypeError("signing nonces cannot be pickled")


# --- helpers (RFC 9591 section 4) --------------------------------------------------------


def nonce_generate(secret: bytes, random_bytes: bytes | None = None) -> bytes:
    """``random_bytes`` is for the RFC's test vectors only; otherwise 32 fresh bytes."""
    if random_bytes is None:
        random_bytes = os.urandom(32)
    if len(random_bytes) != 32:
        raise FrostError("nonce randomness is 32 bytes")
    return H3(random_bytes + secret)


def derive_interpolating_value(participants: list[int], x_i: int) -> bytes:
    """The Lagrange coefficient of ``x_i`` at 0 over ``participants``."""
    if x_i not in participants or len(set(participants)) != len(participants):
        raise FrostError("invalid parameters: the identifier is not in the list, or the list repeats one")
    numerator, denominator = G.ONE, G.ONE
    x_i_scalar = G.scalar(x_i)
    for x_j in participants:
        if x_j == x_i:
            continue
        x_j_scalar = G.scalar(x_j)
        numerator = G.mul(numerator, x_j_scalar)
        denominator = G.mul(denominator, G.sub(x_j_scalar, x_i_scalar))
    return G.mul(numerator, G.invert(denominator))


def check_commitment_list(commitment_list) -> list[Commitment]:
    """Sorted ascending by identifier, each identifier once (every ``Commitment`` checked
    its identifier and elements when it was made)."""
    result = list(commitment_list)
    if not result or not all(isinstance(c, Commitment) for c in result):
        raise FrostError("the commitment list must be a non-empty list of commitments")
    identifiers = [c.identifier for c in result]
    if identifiers != sorted(set(identifiers)):
        raise FrostError("the commitment list must be sorted by identifier, each identifier once")
    return result


def encode_group_commitment_list(commitment_list: list[Commitment]) -> bytes:
    return b"".join(G.scalar(c.identifier) + G.encode_element(c.hiding) + G.encode_element(c.binding) for c in commitment_list)


def participants_from_commitment_list(commitment_list: list[Commitment]) -> list[int]:
    return [c.identifier for c in commitment_list]


def binding_factor_for_participant(binding_factor_list: dict[int, bytes], identifier: int) -> bytes:
    try:
        return binding_factor_list[identifier]
    except KeyError:
        raise FrostError(f"invalid participant: {identifier} is not in the commitment list")


def _rho_input_prefix(group_public_key: bytes, commitment_list: list[Commitment], msg: bytes) -> bytes:
    return G.encode_element(group_public_key) + H4(msg) + H5(encode_group_commitment_list(commitment_list))


def binding_factor_input(group_public_key: bytes, commitment_list: list[Commitment], msg: bytes, identifier: int) -> bytes:
    """rho_input of ``identifier`` (the test vectors publish it)."""
    return _rho_input_prefix(group_public_key, commitment_list, msg) + G.scalar(identifier)


def compute_binding_factors(group_public_key: bytes, commitment_list: list[Commitment], msg: bytes) -> dict[int, bytes]:
    prefix = _rho_input_prefix(group_public_key, commitment_list, msg)
    return {c.identifier: H1(prefix + G.scalar(c.identifier)) for c in commitment_list}


def compute_group_commitment(commitment_list: list[Commitment], binding_factor_list: dict[int, bytes]) -> bytes:
    group_commitment = G.IDENTITY
    for c in commitment_list:
        binding_factor = binding_factor_for_participant(binding_factor_list, c.identifier)
        group_commitment = G.element_add(group_commitment, G.element_add(c.hiding, G.mult(binding_factor, c.binding)))
    return group_commitment


def compute_challenge(group_commitment: bytes, group_public_key: bytes, msg: bytes) -> bytes:
    return H2(G.encode_element(group_commitment) + G.encode_element(group_public_key) + msg)


# --- round one (RFC 9591 section 5.1) ----------------------------------------------------


def commit(identifier: int, secret_key: bytes, *, hiding_randomness: bytes | None = None, binding_randomness: bytes | None = None) -> SigningNonces:
    """The participant's nonces and their commitment (``*_randomness``: test vectors only)."""
    check_identifier(identifier)
    hiding_nonce = nonce_generate(secret_key, hiding_randomness)
    binding_nonce = nonce_generate(secret_key, binding_randomness)
    commitment = Commitment(identifier, G.base_mult(hiding_nonce), G.base_mult(binding_nonce))
    return SigningNonces(hiding_nonce, binding_nonce, commitment)


# --- round two (RFC 9591 section 5.2) ----------------------------------------------------


def sign(identifier: int, secret_key: bytes, group_public_key: bytes, nonces: SigningNonces, msg: bytes, commitment_list) -> bytes:
    """This participant's signature share. The commitment list must carry the commitment
    of ``nonces`` under ``identifier`` (RFC 9591 section 5.2's input validation)."""
    commitment_list = check_commitment_list(commitment_list)
    own = [c for c in commitment_list if c.identifier == identifier]
    if not own or own[0] != nonces.commitment:
        raise FrostError("the commitment list does not carry this participant's commitment")
    binding_factor_list = compute_binding_factors(group_public_key, commitment_list, msg)
    binding_factor = binding_factor_for_participant(binding_factor_list, identifier)
    group_commitment = compute_group_commitment(commitment_list, binding_factor_list)
    lambda_i = derive_interpolating_value(participants_from_commitment_list(commitment_list), identifier)
    challenge = compute_challenge(group_commitment, group_public_key, msg)
    return G.add(G.add(nonces.hiding, G.mul(nonces.binding, binding_factor)), G.mul(G.mul(lambda_i, secret_key), challenge))


# --- aggregation (RFC 9591 section 5.3) --------------------------------------------------


def verify_signature_share(identifier: int, public_key_i: bytes, sig_share_i: bytes, commitment_list, group_public_key: bytes, msg: bytes) -> bool:
    """Whether participant ``identifier``'s share is valid (its commitment is the list's)."""
    commitment_list = check_commitment_list(commitment_list)
    binding_factor_list = compute_binding_factors(group_public_key, commitment_list, msg)
    group_commitment = compute_group_commitment(commitment_list, binding_factor_list)
    challenge = compute_challenge(group_commitment, group_public_key, msg)
    return _share_is_valid(identifier, public_key_i, sig_share_i, commitment_list, binding_factor_list, challenge)


def _share_is_valid(identifier, public_key_i, sig_share_i, commitment_list, binding_factor_list, challenge) -> bool:
    # The part of verify_signature_share that differs per participant; aggregate computes
    # the binding factors, group commitment and challenge once for all of them.
    comm_i = next((c for c in commitment_list if c.identifier == identifier), None)
    if comm_i is None:
        raise FrostError(f"invalid participant: {identifier} is not in the commitment list")
    binding_factor = binding_factor_for_participant(binding_factor_list, identifier)
    comm_share = G.element_add(comm_i.hiding, G.mult(binding_factor, comm_i.binding))
    lambda_i = derive_interpolating_value(participants_from_commitment_list(commitment_list), identifier)
    left = G.base_mult(sig_share_i)
    right = G.element_add(comm_share, G.mult(G.mul(challenge, lambda_i), public_key_i))
    return left == right


def aggregate(commitment_list, msg: bytes, group_public_key: bytes, sig_shares: dict[int, bytes], verifying_shares: dict[int, bytes] | None = None) -> bytes:
    """The 64-byte Ed25519 signature R || z from one share per listed participant.

    With ``verifying_shares`` (the group info's public keys) every share is checked first
    and the participants whose shares fail are named (identifiable abort, section 5.4).
    The signature is verified against the group key before it is returned, as the RFC
    advises; without ``verifying_shares`` a failure then names no one."""
    commitment_list = check_commitment_list(commitment_list)
    participants = participants_from_commitment_list(commitment_list)
    if sorted(sig_shares) != participants:
        raise FrostError("one signature share per participant of the commitment list is needed")
    binding_factor_list = compute_binding_factors(group_public_key, commitment_list, msg)
    group_commitment = compute_group_commitment(commitment_list, binding_factor_list)
    if verifying_shares is not None:
        challenge = compute_challenge(group_commitment, group_public_key, msg)
        bad = [i for i in participants if i not in verifying_shares
               or not _share_is_valid(i, verifying_shares[i], sig_shares[i], commitment_list, binding_factor_list, challenge)]
        if bad:
            raise InvalidSignatureShare(bad)
    z = G.scalar_sum(sig_shares[i] for i in participants)
    signature = G.encode_element(group_commitment) + z
    if not verify(msg, signature, group_public_key):
        raise InvalidSignatureShare([], "the aggregate signature does not verify (a share is invalid)")
    return signature


def verify(msg: bytes, signature: bytes, public_key: bytes) -> bool:
    """RFC 8032 verification by libsodium (what a Solana node's check accepts)."""
    try:
        VerifyKey(public_key).verify(msg, signature)
        return True
    except (BadSignatureError, ValueError, TypeError):
        return False


# --- key material helpers (RFC 9591 appendix C) ------------------------------------------


def polynomial_evaluate(x: int, coefficients: list[bytes]) -> bytes:
    """f(x) by Horner's method; ``coefficients[0]`` is the constant term."""
    value, x_scalar = G.ZERO, G.scalar(x)
    for coefficient in reversed(coefficients):
        value = G.add(G.mul(value, x_scalar), coefficient)
    return value


def vss_evaluate(x: int, commitment: list[bytes]) -> bytes:
    """Σ_j commitment[j]·x^j: the public image of f(x) under a Feldman VSS commitment."""
    total, power, x_scalar = G.IDENTITY, G.ONE, G.scalar(x)
    for element in commitment:
        total = G.element_add(total, G.mult(power, element))
        power = G.mul(power, x_scalar)
    return total


def interpolate_public(points: dict[int, bytes]) -> bytes:
    """The group element at 0 from public shares {i: f(i)·B} (a consistency check)."""
    participants = sorted(points)
    return G.element_sum(G.mult(derive_interpolating_value(participants, i), points[i]) for i in participants)


def secret_share_combine(shares: dict[int, bytes]) -> bytes:
    """f(0) from shares {i: f(i)} (tests and the trusted-dealer appendix only: FROST never
    reassembles the key)."""
    participants = sorted(shares)
    return G.scalar_sum(G.mul(derive_interpolating_value(participants, i), shares[i]) for i in participants)
