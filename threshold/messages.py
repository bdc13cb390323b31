"""JSON forms of every FROST message and of a participant's local state (version 1).

Every object carries ``type``, ``version`` (1) and ``ciphersuite``
("FROST-ED25519-SHA512-v1"). Scalars and group elements are lowercase hex of their 32-byte
encodings; the message to sign and ciphertexts are standard base64; identifiers are
integers. Parsing is strict: a missing or malformed field raises ``MessageError`` naming
it, every element and scalar is validated as RFC 9591 requires (DeserializeElement /
DeserializeScalar); unknown fields are ignored (a change of meaning takes a new version).
docs/threshold-signing.md lists the formats with examples.
"""

from __future__ import annotations

import base64
import binascii
import re

from . import dkg, frost
from . import group as G
from .keys import KeyPackage, PublicKeyPackage, check_public
from .signing import SessionNonces, Signature, SignatureShare, SigningCommitment, SigningPackage

VERSION = 1
CIPHERSUITE = frost.CONTEXT_STRING.decode()
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class MessageError(ValueError):
    """A message that does not parse; ``field`` names the offending field."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


def base58(raw: bytes) -> str:
    """Bitcoin-alphabet base58 (Solana addresses and signatures)."""
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, rem = divmod(n, 58)
        out = _B58[rem] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


# --- field readers ----------------------------------------------------------------------------


def _get(obj: dict, name: str):
    if name not in obj:
        raise MessageError("is required", name)
    return obj[name]


def _int(obj: dict, name: str) -> int:
    value = _get(obj, name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise MessageError("must be an integer", name)
    return value


def _identifier(obj: dict, name: str) -> int:
    value = _int(obj, name)
    if not 1 <= value <= frost.MAX_IDENTIFIER:
        raise MessageError(f"must be from 1 to {frost.MAX_IDENTIFIER}", name)
    return value


def _session(obj: dict, name: str = "sessionId") -> str:
    value = _get(obj, name)
    if not isinstance(value, str) or not _SESSION_ID.match(value):
        raise MessageError("must be 1-128 characters of letters, digits and . _ : - (starting with a letter or digit)", name)
    return value


def _bytes_hex(obj: dict, name: str, size: int) -> bytes:
    value = _get(obj, name)
    if not isinstance(value, str) or len(value) != 2 * size or value != value.lower():
        raise MessageError(f"must be {size} bytes of lowercase hex", name)
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise MessageError(f"must be {size} bytes of lowercase hex", name)


def _element(obj: dict, name: str) -> bytes:
    try:
        return G.decode_element(_bytes_hex(obj, name, 32))
    except G.EncodingError as exc:
        raise MessageError(str(exc), name)


def _scalar(obj: dict, name: str) -> bytes:
    try:
        return G.decode_scalar(_bytes_hex(obj, name, 32))
    except G.EncodingError as exc:
        raise MessageError(str(exc), name)


def _b64(obj: dict, name: str) -> bytes:
    value = _get(obj, name)
    if not isinstance(value, str):
        raise MessageError("must be base64", name)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MessageError("must be base64", name)


def _list(obj: dict, name: str) -> list:
    value = _get(obj, name)
    if not isinstance(value, list):
        raise MessageError("must be a list", name)
    return value


def _participants(obj: dict) -> tuple[int, ...]:
    items = _list(obj, "participants")
    return tuple(_identifier({"participants": p}, "participants") for p in items)


def _envelope(type_: str) -> dict:
    return {"type": type_, "version": VERSION, "ciphersuite": CIPHERSUITE}


def _hex(raw: bytes) -> str:
    return raw.hex()


def _b64s(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# --- writers ----------------------------------------------------------------------------------


def _round1(p: dkg.Round1Package) -> dict:
    out = _envelope(f"frost-{p.kind}-round1") | {"sessionId": p.session_id, "identifier": p.identifier, "threshold": p.threshold,
                                                 "participants": list(p.participants), "commitment": [_hex(e) for e in p.commitment],
                                                 "encryptionKey": _hex(p.encryption_key)}
    if p.kind == dkg.DKG:
        out["proofOfKnowledge"] = _hex(p.proof)
    else:
        out["groupPublicKey"] = _hex(p.group_public_key)
    return out


def _round2(p: dkg.Round2Package) -> dict:
    return _envelope(f"frost-{p.kind}-round2") | {"sessionId": p.session_id, "sender": p.sender, "recipient": p.recipient,
                                                  "encryptedShare": _b64s(p.encrypted_share)}


def _complaint(c: dkg.Complaint) -> dict:
    return _envelope("frost-dkg-complaint") | {"sessionId": c.session_id, "kind": c.kind, "accuser": c.accuser, "accused": c.accused,
                                               "encryptionSecretKey": _hex(c.encryption_secret), "round2Package": _round2(c.package)}


def _public(p: PublicKeyPackage) -> dict:
    return _envelope("frost-public-key-package") | {"threshold": p.threshold, "groupPublicKey": _hex(p.group_public_key),
                                                    "address": base58(p.group_public_key),
                                                    "verifyingShares": {str(i): _hex(p.verifying_shares[i]) for i in sorted(p.verifying_shares)}}


def _key(k: KeyPackage) -> dict:
    return _envelope("frost-key-package") | {"identifier": k.identifier, "signingShare": _hex(k.signing_share), "publicKeyPackage": _public(k.public)}


def _commitment_fields(c: frost.Commitment) -> dict:
    return {"identifier": c.identifier, "hiding": _hex(c.hiding), "binding": _hex(c.binding)}


def _signing_commitment(c: SigningCommitment) -> dict:
    return _envelope("frost-signing-commitment") | {"sessionId": c.session_id} | _commitment_fields(c.commitment)


def _signing_package(p: SigningPackage) -> dict:
    return _envelope("frost-signing-package") | {"sessionId": p.session_id, "groupPublicKey": _hex(p.group_public_key),
                                                 "message": _b64s(p.message), "commitments": [_commitment_fields(c) for c in p.commitments]}


def _share(s: SignatureShare) -> dict:
    return _envelope("frost-signature-share") | {"sessionId": s.session_id, "identifier": s.identifier, "signatureShare": _hex(s.share)}


def _signature(s: Signature) -> dict:
    return _envelope("frost-signature") | {"sessionId": s.session_id, "groupPublicKey": _hex(s.group_public_key),
                                           "signature": _hex(s.signature), "signatureBase58": base58(s.signature)}


def _nonces(n: SessionNonces) -> dict:
    return _envelope("frost-signing-nonces") | {"sessionId": n.session_id, "hidingNonce": _hex(n.nonces.hiding),
                                                "bindingNonce": _hex(n.nonces.binding)} | _commitment_fields(n.nonces.commitment)


def _state(s: dkg.Round1Secret | dkg.Round2Secret) -> dict:
    round1 = s if isinstance(s, dkg.Round1Secret) else s.round1
    out = _envelope("frost-dkg-state") | {"round": 1 if s is round1 else 2, "round1Package": _round1(round1.package),
                                          "coefficients": [_hex(a) for a in round1.coefficients],
                                          "encryptionSecretKey": _hex(round1.encryption_secret)}
    if isinstance(s, dkg.Round2Secret):
        out["received"] = [_round1(p) for _, p in sorted(s.received.items())]
        out["transcript"] = _hex(s.transcript)
    return out


_WRITERS = [(dkg.Round1Package, _round1), (dkg.Round2Package, _round2), (dkg.Complaint, _complaint), (PublicKeyPackage, _public),
            (KeyPackage, _key), (SigningCommitment, _signing_commitment), (SigningPackage, _signing_package),
            (SignatureShare, _share), (Signature, _signature), (SessionNonces, _nonces), (dkg.Round1Secret, _state),
            (dkg.Round2Secret, _state)]


def to_json(obj) -> dict:
    """The JSON object (a dict) of any message or state object of this package."""
    for cls, writer in _WRITERS:
        if isinstance(obj, cls):
            return writer(obj)
    raise TypeError(f"no JSON form for {type(obj).__name__}")


# --- readers ----------------------------------------------------------------------------------


def _read_round1(obj: dict, kind: str) -> dkg.Round1Package:
    commitment = tuple(_element({"commitment": e}, "commitment") for e in _list(obj, "commitment"))
    return dkg.Round1Package(kind, _session(obj), _identifier(obj, "identifier"), _int(obj, "threshold"), _participants(obj),
                             commitment, _bytes_hex(obj, "encryptionKey", 32),
                             proof=_bytes_hex(obj, "proofOfKnowledge", 64) if kind == dkg.DKG else None,
                             group_public_key=_element(obj, "groupPublicKey") if kind == dkg.REFRESH else None)


def _read_round2(obj: dict, kind: str) -> dkg.Round2Package:
    return dkg.Round2Package(kind, _session(obj), _identifier(obj, "sender"), _identifier(obj, "recipient"), _b64(obj, "encryptedShare"))


def _read_complaint(obj: dict) -> dkg.Complaint:
    kind = _get(obj, "kind")
    if kind not in (dkg.DKG, dkg.REFRESH):
        raise MessageError("must be dkg or refresh", "kind")
    package = from_json(_get(obj, "round2Package"))
    if not isinstance(package, dkg.Round2Package) or package.kind != kind:
        raise MessageError(f"must be a frost-{kind}-round2 message", "round2Package")
    return dkg.Complaint(_session(obj), kind, _identifier(obj, "accuser"), _identifier(obj, "accused"),
                         _bytes_hex(obj, "encryptionSecretKey", 32), package)


def _read_public(obj: dict) -> PublicKeyPackage:
    shares = _get(obj, "verifyingShares")
    if not isinstance(shares, dict) or not shares:
        raise MessageError("must be an object of identifier → verifying share", "verifyingShares")
    verifying = {}
    for key, value in shares.items():
        if not key.isdigit():
            raise MessageError("keys must be identifiers", "verifyingShares")
        verifying[_identifier({"verifyingShares": int(key)}, "verifyingShares")] = _element({"verifyingShares": value}, "verifyingShares")
    public = PublicKeyPackage(_int(obj, "threshold"), _element(obj, "groupPublicKey"), verifying)
    try:
        return check_public(public)
    except ValueError as exc:
        raise MessageError(str(exc), "verifyingShares")


def _read_key(obj: dict) -> KeyPackage:
    public = from_json(_get(obj, "publicKeyPackage"))
    if not isinstance(public, PublicKeyPackage):
        raise MessageError("must be a frost-public-key-package", "publicKeyPackage")
    identifier = _identifier(obj, "identifier")
    if identifier not in public.verifying_shares:
        raise MessageError("has no verifying share", "identifier")
    try:
        return KeyPackage(identifier, _scalar(obj, "signingShare"), public).check()
    except ValueError as exc:
        raise MessageError(str(exc), "signingShare")


def _read_commitment(obj: dict) -> frost.Commitment:
    return frost.Commitment(_identifier(obj, "identifier"), _element(obj, "hiding"), _element(obj, "binding"))


def _read_signing_package(obj: dict) -> SigningPackage:
    commitments = []
    for item in _list(obj, "commitments"):
        if not isinstance(item, dict):
            raise MessageError("items must be objects", "commitments")
        commitments.append(_read_commitment(item))
    try:
        frost.check_commitment_list(commitments)
    except (frost.FrostError, G.EncodingError) as exc:
        raise MessageError(str(exc), "commitments")
    return SigningPackage(_session(obj), _element(obj, "groupPublicKey"), _b64(obj, "message"), tuple(commitments))


def _read_signature(obj: dict) -> Signature:
    return Signature(_session(obj), _element(obj, "groupPublicKey"), _bytes_hex(obj, "signature", 64))


def _read_nonces(obj: dict) -> SessionNonces:
    nonces = frost.SigningNonces(_scalar(obj, "hidingNonce"), _scalar(obj, "bindingNonce"), _read_commitment(obj))
    if G.base_mult(nonces.hiding) != nonces.commitment.hiding or G.base_mult(nonces.binding) != nonces.commitment.binding:
        raise MessageError("the nonces do not match their commitment", "hidingNonce")
    return SessionNonces(_session(obj), nonces)


def _read_state(obj: dict):
    package = from_json(_get(obj, "round1Package"))
    if not isinstance(package, dkg.Round1Package):
        raise MessageError("must be a round-1 package", "round1Package")
    coefficients = tuple(_scalar({"coefficients": a}, "coefficients") for a in _list(obj, "coefficients"))
    round1 = dkg.Round1Secret(package, coefficients, _bytes_hex(obj, "encryptionSecretKey", 32))
    if _int(obj, "round") == 1:
        return round1
    received = {}
    for item in _list(obj, "received"):
        p = from_json(item)
        if not isinstance(p, dkg.Round1Package):
            raise MessageError("items must be round-1 packages", "received")
        received[p.identifier] = p
    return dkg.Round2Secret(round1, received, _bytes_hex(obj, "transcript", 32))


_READERS = {
    "frost-dkg-round1": lambda o: _read_round1(o, dkg.DKG),
    "frost-refresh-round1": lambda o: _read_round1(o, dkg.REFRESH),
    "frost-dkg-round2": lambda o: _read_round2(o, dkg.DKG),
    "frost-refresh-round2": lambda o: _read_round2(o, dkg.REFRESH),
    "frost-dkg-complaint": _read_complaint,
    "frost-public-key-package": _read_public,
    "frost-key-package": _read_key,
    "frost-signing-commitment": lambda o: SigningCommitment(_session(o), _read_commitment(o)),
    "frost-signing-package": _read_signing_package,
    "frost-signature-share": lambda o: SignatureShare(_session(o), _identifier(o, "identifier"), _scalar(o, "signatureShare")),
    "frost-signature": _read_signature,
    "frost-signing-nonces": _read_nonces,
    "frost-dkg-state": _read_state,
}


def from_json(obj, expect: str | tuple[str, ...] | None = None):
    """The object of a JSON message (a dict), checked; ``expect`` restricts its type."""
    if not isinstance(obj, dict):
        raise MessageError("a message is a JSON object")
    type_ = _get(obj, "type")
    if type_ not in _READERS:
        raise MessageError(f"unknown message type {type_!r}", "type")
    if expect is not None and type_ not in ((expect,) if isinstance(expect, str) else expect):
        raise MessageError(f"expected {expect}, got {type_}", "type")
    if _get(obj, "version") != VERSION:
        raise MessageError(f"unsupported version (this implementation reads version {VERSION})", "version")
    if _get(obj, "ciphersuite") != CIPHERSUITE:
        raise MessageError(f"must be {CIPHERSUITE}", "ciphersuite")
    return _READERS[type_](obj)
