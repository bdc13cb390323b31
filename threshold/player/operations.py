"""What an external player does, on JSON messages (``threshold.messages``).

Each function takes an open ``Store`` and JSON objects (dicts) and returns JSON objects, so
the CLI, a test or a client's own program call the same code; ``remote`` runs them against
the service's API. The coordinator's stateless steps (``signing_package``, ``aggregate``,
``complaint_check``) need no store.

Nonces are consumed once, crash-safely: ``sign`` runs under the store lock, computes the
share, and replaces the nonce record by {package digest, share} — fsynced — before it
returns the share. A retry with the same signing package (the process died before the
share was delivered) answers the same share; any other package is refused
(``NonceReuse``), so no two different inputs are ever signed with one nonce.
"""

from __future__ import annotations

from .. import dkg, frost
from .. import messages as M
from .. import signing as S
from ..keys import KeyPackage
from .store import Store, StoreError, check_name

CONSUMED = "frost-signing-nonces-consumed"


class NonceReuse(StoreError):
    """The session's nonces already signed another signing package."""


def _key(store: Store, key_name: str) -> KeyPackage:
    record = store.get("keys", check_name(key_name, "key name"))
    if record is None:
        raise StoreError(f"no key named {key_name} in this store")
    return M.from_json(record, "frost-key-package")


def _parse_all(messages, expect):
    return [M.from_json(m, expect) for m in messages]


# --- keys ---------------------------------------------------------------------------------


def keys_list(store: Store) -> list[dict]:
    out = []
    for name in store.names("keys"):
        key = _key(store, name)
        out.append({"key": name, "identifier": key.identifier, "threshold": key.threshold,
                    "participants": key.public.participants, "groupPublicKey": key.group_public_key.hex(),
                    "address": M.base58(key.group_public_key)})
    return out


def public_key_package(store: Store, key_name: str) -> dict:
    return M.to_json(_key(store, key_name).public)


# --- key generation and refresh -------------------------------------------------------------


def dkg_round1(store: Store, *, session_id: str, identifier: int, threshold: int, participants: list[int]) -> dict:
    check_name(session_id, "session id")
    with store.lock():
        if store.get("dkg", session_id) is not None:
            raise StoreError(f"session {session_id} already has key-generation state in this store")
        state = dkg.round1(session_id=session_id, identifier=identifier, threshold=threshold, participants=participants)
        store.put("dkg", session_id, M.to_json(state))
    return M.to_json(state.package)


def refresh_round1(store: Store, *, key_name: str, session_id: str, participants: list[int]) -> dict:
    check_name(session_id, "session id")
    with store.lock():
        if store.get("dkg", session_id) is not None:
            raise StoreError(f"session {session_id} already has state in this store")
        state = dkg.refresh_round1(session_id=session_id, key_package=_key(store, key_name), participants=participants)
        store.put("dkg", session_id, M.to_json(state))
    return M.to_json(state.package)


def _state(store: Store, session_id: str):
    record = store.get("dkg", check_name(session_id, "session id"))
    if record is None:
        raise StoreError(f"no key-generation or refresh state for session {session_id} in this store")
    return M.from_json(record, "frost-dkg-state")


def round2(store: Store, *, session_id: str, round1_messages: list[dict]) -> list[dict]:
    """Round 2 of key generation or refresh: the encrypted shares for the others. Run again
    with the same round-1 packages it answers the same shares (new encryptions); with other
    packages it refuses, so a share never goes to a key it was not first meant for."""
    with store.lock():
        state = _state(store, session_id)
        kind = state.package.kind if isinstance(state, dkg.Round1Secret) else state.round1.package.kind
        packages = _parse_all(round1_messages, f"frost-{kind}-round1")
        first = state if isinstance(state, dkg.Round1Secret) else state.round1
        new_state, out = dkg.round2(first, packages)
        if isinstance(state, dkg.Round2Secret) and state.transcript != new_state.transcript:
            raise StoreError(f"round 2 of session {session_id} already ran with other round-1 packages")
        store.put("dkg", session_id, M.to_json(new_state))
    return [M.to_json(p) for p in out]


def _round2_state(store: Store, session_id: str, kind: str) -> dkg.Round2Secret:
    state = _state(store, session_id)
    if not isinstance(state, dkg.Round2Secret):
        raise StoreError(f"session {session_id} has not run round 2 yet")
    if state.round1.package.kind != kind:
        raise StoreError(f"session {session_id} is not a {kind} session")
    return state


def dkg_finish(store: Store, *, session_id: str, key_name: str, round2_messages: list[dict]) -> dict:
    """Verify the shares received (a bad one names its sender), store the key package
    under ``key_name`` and drop the session's state. Returns the public key package."""
    check_name(key_name, "key name")
    with store.lock():
        state = _round2_state(store, session_id, dkg.DKG)
        key = dkg.finish(state, _parse_all(round2_messages, "frost-dkg-round2"))
        existing = store.get("keys", key_name)
        if existing is not None and M.from_json(existing).group_public_key != key.group_public_key:
            raise StoreError(f"a key named {key_name} already exists")
        store.put("keys", key_name, M.to_json(key))
        store.delete("dkg", session_id)
    return M.to_json(key.public)


def refresh_finish(store: Store, *, session_id: str, key_name: str, round2_messages: list[dict]) -> dict:
    """Replace ``key_name``'s share by the refreshed one (same group key); the old share
    is overwritten in the same atomic write."""
    with store.lock():
        state = _round2_state(store, session_id, dkg.REFRESH)
        key = dkg.refresh_finish(state, _parse_all(round2_messages, "frost-refresh-round2"), _key(store, key_name))
        store.put("keys", key_name, M.to_json(key))
        store.delete("dkg", session_id)
    return M.to_json(key.public)


def complaint(store: Store, *, session_id: str, round2_message: dict) -> dict:
    """A verifiable complaint about one received share (reveals this session's X25519 key)."""
    state = _state(store, session_id)
    if not isinstance(state, dkg.Round2Secret):
        raise StoreError(f"session {session_id} has not run round 2 yet")
    return M.to_json(dkg.complaint_create(state, M.from_json(round2_message, ("frost-dkg-round2", "frost-refresh-round2"))))


def complaint_check(complaint_message: dict, round1_messages: list[dict]) -> dict:
    c = M.from_json(complaint_message, "frost-dkg-complaint")
    culprit = dkg.complaint_check(c, _parse_all(round1_messages, f"frost-{c.kind}-round1"))
    return {"sessionId": c.session_id, "accuser": c.accuser, "accused": c.accused, "culprit": culprit}


def abandon(store: Store, *, session_id: str) -> None:
    """Drop a key-generation or refresh session's state (an aborted session)."""
    with store.lock():
        store.delete("dkg", check_name(session_id, "session id"))


# --- signing ---------------------------------------------------------------------------------


def commit(store: Store, *, key_name: str, session_id: str) -> dict:
    """Round one: fresh nonces for ``session_id``, stored; returns the commitment."""
    check_name(session_id, "session id")
    kind = f"nonces/{check_name(key_name, 'key name')}"
    with store.lock():
        if store.get(kind, session_id) is not None:
            raise NonceReuse(f"session {session_id} already has commitments of key {key_name}; a session commits once")
        nonces = S.commit(_key(store, key_name), session_id)
        store.put(kind, session_id, M.to_json(nonces))
    return M.to_json(S.SigningCommitment(session_id, nonces.nonces.commitment))


def sign(store: Store, *, key_name: str, signing_package: dict) -> dict:
    """Round two: this player's signature share for the package (nonces consumed once)."""
    package = M.from_json(signing_package, "frost-signing-package")
    kind = f"nonces/{check_name(key_name, 'key name')}"
    digest = S.package_digest(package)
    with store.lock():
        key = _key(store, key_name)
        record = store.get(kind, package.session_id)
        if record is None:
            raise StoreError(f"key {key_name} has no commitments for session {package.session_id}")
        if record.get("type") == CONSUMED:
            if record["packageDigest"] != digest.hex():
                raise NonceReuse(f"the nonces of session {package.session_id} already signed another signing package")
            return record["signatureShare"]
        share = M.to_json(S.sign(key, M.from_json(record, "frost-signing-nonces"), package))
        # The nonces are overwritten (fsynced) before the share leaves this function.
        store.put(kind, package.session_id, {"type": CONSUMED, "version": M.VERSION, "sessionId": package.session_id,
                                             "identifier": key.identifier, "packageDigest": digest.hex(), "signatureShare": share})
    return share


def signing_package(*, public_key_package: dict, session_id: str, message: bytes, commitments: list[dict]) -> dict:
    """The coordinator's round-two input from the participants' commitments."""
    public = M.from_json(public_key_package, "frost-public-key-package")
    items = _parse_all(commitments, "frost-signing-commitment")
    return M.to_json(S.signing_package(check_name(session_id, "session id"), public, message, items))


def aggregate(*, public_key_package: dict, signing_package: dict, shares: list[dict]) -> dict:
    """Verify every share (a bad one names its player) and aggregate the Ed25519 signature."""
    public = M.from_json(public_key_package, "frost-public-key-package")
    package = M.from_json(signing_package, "frost-signing-package")
    return M.to_json(S.aggregate(public, package, _parse_all(shares, "frost-signature-share")))


def verify(*, group_public_key: bytes, message: bytes, signature: bytes) -> bool:
    return frost.verify(message, signature, group_public_key)
