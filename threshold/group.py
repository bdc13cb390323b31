"""The edwards25519 group and its scalar field, as RFC 9591 section 6.1 uses them.

Every group and scalar operation is libsodium's, through PyNaCl's low-level bindings
(``crypto_core_ed25519_*``, ``crypto_scalarmult_ed25519_*_noclamp``): this module only
encodes, decodes and validates. Elements are their 32-byte RFC 8032 encodings and scalars
their canonical 32-byte little-endian encodings, so values compare with ``==`` and go on
the wire as they are.

libsodium refuses two inputs the protocol can meet: a scalar multiplication by zero and one
of the identity element (both would yield the identity, which its API never returns). The
identity is a legitimate intermediate value (a running sum starts there), so ``base_mult``
and ``mult`` answer it themselves; ``encode_element`` refuses to put it on the wire, as the
RFC's SerializeElement does.
"""

from __future__ import annotations

import hashlib
import os

from nacl import bindings as _na
from nacl.exceptions import RuntimeError as _SodiumError

#: The prime order of the group, L = 2^252 + 27742317777372353535851937790883648493.
ORDER = 2**252 + 27742317777372353535851937790883648493

SCALAR_SIZE = 32
ELEMENT_SIZE = 32
IDENTITY = bytes([1]) + bytes(31)
ZERO = bytes(32)
ONE = (1).to_bytes(32, "little")


class EncodingError(ValueError):
    """A byte string that is not a valid scalar or group element."""


# --- scalars ----------------------------------------------------------------------------


def scalar(n: int) -> bytes:
    """A small non-negative integer (an identifier, an exponent) as a scalar."""
    if not 0 <= n < ORDER:
        raise EncodingError("integer out of the scalar range")
    return n.to_bytes(SCALAR_SIZE, "little")


def decode_scalar(buf: bytes) -> bytes:
    """DeserializeScalar: 32 bytes, little-endian, less than the group order."""
    if not isinstance(buf, (bytes, bytearray)) or len(buf) != SCALAR_SIZE:
        raise EncodingError("a scalar is 32 bytes")
    if int.from_bytes(buf, "little") >= ORDER:
        raise EncodingError("a scalar must be less than the group order")
    return bytes(buf)


def random_scalar() -> bytes:
    """RandomScalar by wide reduction (RFC 9591 appendix D.2): 64 random bytes mod L."""
    return _na.crypto_core_ed25519_scalar_reduce(os.urandom(64))


def reduce_wide(digest: bytes) -> bytes:
    """A 64-byte hash output read little-endian and reduced modulo L."""
    return _na.crypto_core_ed25519_scalar_reduce(digest)


def add(a: bytes, b: bytes) -> bytes:
    return _na.crypto_core_ed25519_scalar_add(a, b)


def sub(a: bytes, b: bytes) -> bytes:
    return _na.crypto_core_ed25519_scalar_sub(a, b)


def mul(a: bytes, b: bytes) -> bytes:
    return _na.crypto_core_ed25519_scalar_mul(a, b)


def invert(a: bytes) -> bytes:
    if a == ZERO:
        raise ZeroDivisionError("zero has no inverse")
    return _na.crypto_core_ed25519_scalar_invert(a)


def scalar_sum(values) -> bytes:
    total = ZERO
    for value in values:
        total = add(total, value)
    return total


def scalar_sha512(*parts: bytes) -> bytes:
    """SHA-512 of the concatenation, reduced modulo L (the RFC's H1/H2/H3 shape)."""
    return reduce_wide(hashlib.sha512(b"".join(parts)).digest())


# --- elements ---------------------------------------------------------------------------


def decode_element(buf: bytes) -> bytes:
    """DeserializeElement: a canonical encoding of a point in the prime-order subgroup
    that is not the identity (libsodium's ``is_valid_point`` also refuses every point of
    small order)."""
    if not isinstance(buf, (bytes, bytearray)) or len(buf) != ELEMENT_SIZE:
        raise EncodingError("a group element is 32 bytes")
    if not _na.crypto_core_ed25519_is_valid_point(bytes(buf)):
        raise EncodingError("not a valid edwards25519 point of the prime-order subgroup, or the identity")
    return bytes(buf)


def encode_element(element: bytes) -> bytes:
    """SerializeElement: refuses the identity."""
    if element == IDENTITY:
        raise EncodingError("the identity element cannot be serialized")
    return element


def base_mult(s: bytes) -> bytes:
    """ScalarBaseMult(s) = s·B, without clamping (the protocol's scalars are already reduced)."""
    if s == ZERO:
        return IDENTITY
    return _na.crypto_scalarmult_ed25519_base_noclamp(s)


def mult(s: bytes, element: bytes) -> bytes:
    """ScalarMult(element, s) = s·element."""
    if s == ZERO or element == IDENTITY:
        return IDENTITY
    try:
        return _na.crypto_scalarmult_ed25519_noclamp(s, element)
    except _SodiumError:
        raise EncodingError("scalar multiplication of an invalid point")


def element_add(p: bytes, q: bytes) -> bytes:
    return _na.crypto_core_ed25519_add(p, q)


def element_sub(p: bytes, q: bytes) -> bytes:
    return _na.crypto_core_ed25519_sub(p, q)


def element_sum(elements) -> bytes:
    total = IDENTITY
    for element in elements:
        total = element_add(total, element)
    return total
