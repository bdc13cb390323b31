"""Key custody: managed Ed25519 keys under AES-256-GCM envelope encryption (docs/custody.md).

Each private key is encrypted with its own random 256-bit data key; the data key is
wrapped by the master key. Associated data binds both ciphertexts to the key's public
key, so a ciphertext moved to another row does not decrypt. Keys are decrypted only at
signing time (``managed_key_signer``) or by the role-gated export service
(``managed_key_export``). Nothing here logs or reprs key material.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ledger_project import base58
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count
from django.utils import timezone
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from .errors import CustodyError, InvalidPrivateKey, ManagedKeyExists
from .models import KeyLocation, ManagedKey

_WRAP_AAD = b"ledger/custody/dek-wrap/v1:"
_KEY_AAD = b"ledger/custody/secret-key/v1:"


# --- master keyring -----------------------------------------------------------------


def _decode_master(text: str) -> bytes:
    text = text.strip()
    for decoder in (base64.urlsafe_b64decode, base64.b64decode):
        try:
            raw = decoder(text + "=" * (-len(text) % 4))
        except ValueError:
            continue
        if len(raw) == 32:
            return raw
    raise CustodyError("A master key must be 32 bytes, base64-encoded.")


def master_key_id(key: bytes) -> str:
    return hashlib.sha256(b"ledger/custody/master-key-id:" + key).hexdigest()[:16]


def encode_master_key(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode()


def _key_file_entries(path: Path) -> list[bytes]:
    if not path.exists():
        if not settings.LEDGER_EMBEDDED:
            # Production never makes up a master key (settings refuse to start without one).
            raise CustodyError(f"The master key file {path} does not exist and LEDGER_MASTER_KEY is not set.")
        _write_private_file(path, encode_master_key(secrets.token_bytes(32)) + "\n")
    return [_decode_master(line) for line in path.read_text().splitlines() if line.strip()]


def keyring() -> list[bytes]:
    """Master keys, current first. From LEDGER_MASTER_KEY (comma-separated) or the key
    file (one per line; in embedded mode only, created 0600 with a fresh key on first use)."""
    if settings.LEDGER_MASTER_KEY:
        return [_decode_master(part) for part in settings.LEDGER_MASTER_KEY.split(",") if part.strip()]
    return _key_file_entries(Path(settings.LEDGER_MASTER_KEY_FILE))


def current_master_key_id() -> str:
    """The id of the master key new seals use (the keyring's first)."""
    return master_key_id(keyring()[0])


def _master_by_id(key_id: str) -> bytes:
    for key in keyring():
        if master_key_id(key) == key_id:
            return key
    raise CustodyError(f"Master key {key_id} is not in the keyring; cannot unwrap.")


# --- storage backends ------------------------------------------------------------------


def _write_private_file(path: Path, content: str) -> None:
    """Atomically write a 0600 file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _secrets_path(public_key: str) -> Path:
    # A name of its own per sealing: a concurrent import of the same key (refused by the
    # unique column) must not overwrite the file the committed row names.
    return Path(settings.LEDGER_SECRETS_DIR) / f"{public_key}.{secrets.token_hex(4)}.json"


def _store_ciphertext(key: ManagedKey, nonce: bytes, ciphertext: bytes) -> None:
    """DATABASE: the ciphertext goes in the row. SECRETS: the row names its file, and the
    ciphertext stays in the row until the row has committed; then the file is written and
    the row's copy cleared (``_move_to_secrets_file``). A write phase that rolls back (a
    4xx, a retry, a duplicate refused by the unique column) therefore leaves no file, and
    a crash after the commit leaves the key readable from the row."""
    key.key_nonce, key.ciphertext = nonce, ciphertext
    if key.location == KeyLocation.SECRETS:
        key.secret_ref = _secrets_path(key.public_key).name


def _move_to_secrets_file(key: ManagedKey) -> None:
    """After the commit: write the SECRETS file, then clear the row's copy."""
    path = Path(settings.LEDGER_SECRETS_DIR) / key.secret_ref
    nonce, ciphertext = bytes(key.key_nonce), bytes(key.ciphertext)
    _write_private_file(path, json.dumps({"publicKey": key.public_key, "nonce": nonce.hex(), "ciphertext": ciphertext.hex()}))
    ManagedKey.objects.filter(pk=key.pk, secret_ref=key.secret_ref).update(key_nonce=b"", ciphertext=b"")
    key.key_nonce, key.ciphertext = b"", b""


def secrets_files_complete() -> int:
    """Write the files of committed SECRETS keys whose process stopped between its commit
    and the file (their ciphertext is still in the row); run by rotation. Returns how many."""
    pending = ManagedKey.objects.filter(location=KeyLocation.SECRETS).exclude(ciphertext=b"")
    count = 0
    for key in pending.iterator():
        _move_to_secrets_file(key)
        count += 1
    return count


def _load_ciphertext(key: ManagedKey) -> tuple[bytes, bytes]:
    if key.location == KeyLocation.SECRETS and not bytes(key.ciphertext or b""):
        path = Path(settings.LEDGER_SECRETS_DIR) / key.secret_ref
        try:
            blob = json.loads(path.read_text())
        except FileNotFoundError:
            raise CustodyError(f"The secrets file of {key.public_key} is missing.")
        if blob.get("publicKey") != key.public_key:
            raise CustodyError(f"The secrets file of {key.public_key} belongs to another key.")
        return bytes.fromhex(blob["nonce"]), bytes.fromhex(blob["ciphertext"])
    return bytes(key.key_nonce), bytes(key.ciphertext)


# --- encryption --------------------------------------------------------------------------


# Sealing and retirement exclude each other (docs/custody.md, "Sealing happens in the write
# phase"): a value is sealed only inside a database transaction, under the shared sealing
# lock, reading the keyring then; retirement takes the lock exclusively, so it waits for
# every transaction that may have sealed under the key it drops, sees their rows, and no
# seal can pick that key after it.
_SEALING_LOCK = 0x6C656467  # "ledg": the advisory lock's key on PostgreSQL


def _sealing_lock(*, exclusive: bool = False) -> None:
    if not connection.in_atomic_block:
        raise CustodyError("Values are sealed only inside a database transaction (a service's write phase).")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock{'' if exclusive else '_shared'}(%s)", [_SEALING_LOCK])
    # SQLite: every transaction begins IMMEDIATE (settings.py) and holds the database's one
    # write lock until it ends, which excludes sealing and retirement from each other.


def _seal_into(key: ManagedKey, secret: bytes) -> None:
    """Seal ``secret`` onto ``key`` under the current master key (inside a transaction)."""
    _sealing_lock()
    master = keyring()[0]
    public_key = key.public_key
    dek = AESGCM.generate_key(bit_length=256)
    key_nonce = secrets.token_bytes(12)
    ciphertext = AESGCM(dek).encrypt(key_nonce, secret, _KEY_AAD + public_key.encode())
    key.wrap_nonce = secrets.token_bytes(12)
    key.wrapped_dek = AESGCM(master).encrypt(key.wrap_nonce, dek, _WRAP_AAD + public_key.encode())
    key.master_key_id = master_key_id(master)
    _store_ciphertext(key, key_nonce, ciphertext)


def _open(key: ManagedKey) -> bytes:
    aad = key.public_key.encode()
    try:
        dek = AESGCM(_master_by_id(key.master_key_id)).decrypt(bytes(key.wrap_nonce), bytes(key.wrapped_dek), _WRAP_AAD + aad)
        nonce, ciphertext = _load_ciphertext(key)
        secret = AESGCM(dek).decrypt(nonce, ciphertext, _KEY_AAD + aad)
    except InvalidTag:
        raise CustodyError(f"The key material of {key.public_key} does not decrypt: it was altered or belongs to another key.")
    if bytes(Keypair.from_bytes(secret).pubkey()) != bytes(Pubkey.from_string(key.public_key)):
        raise CustodyError(f"The key material of {key.public_key} is for another public key.")
    return secret


# --- services -----------------------------------------------------------------------------


def _parse_secret(secret: str) -> bytes:
    """64-byte secret key from base58 (64-byte key or 32-byte seed) or a JSON int array."""
    text = (secret or "").strip()
    if not text:
        raise InvalidPrivateKey("The private key is empty.")
    if text.startswith("["):
        try:
            values = json.loads(text)
            raw = bytes(values)
        except (ValueError, TypeError):
            raise InvalidPrivateKey("A JSON private key must be an array of byte values (0-255).")
    else:
        try:
            raw = base58.b58decode(text)
        except ValueError:
            raise InvalidPrivateKey("The private key is not valid base58.")
    if len(raw) == 32:
        return bytes(Keypair.from_seed(raw))
    if len(raw) != 64:
        raise InvalidPrivateKey(f"A private key must be a 64-byte secret key or a 32-byte seed, not {len(raw)} bytes.")
    derived = Keypair.from_seed(raw[:32])
    if bytes(derived.pubkey()) != raw[32:]:
        raise InvalidPrivateKey("The secret key's public half does not match its seed.")
    return raw


def _unsealed(keypair: Keypair, location: str) -> ManagedKey:
    """A key held in memory only: it signs (``managed_key_signer``) but is sealed and
    stored only by ``managed_key_store``, in the write phase."""
    key = ManagedKey(public_key=str(keypair.pubkey()), location=location)
    key._unsealed = _KeySigner(keypair)
    return key


def managed_key_store(key: ManagedKey) -> ManagedKey:
    """Seal an in-memory key under the current master key and save it (a service's write
    phase; its own savepoint). Another row holding the same public key: ManagedKeyExists.
    Sealing here, not when the key was made, means a master key retired meanwhile is never
    the one a stored key is under."""
    signer = getattr(key, "_unsealed", None)
    if signer is None or key.pk is not None:
        raise CustodyError(f"Managed key {key.public_key} is not an unsaved key of this process.")
    try:
        with transaction.atomic():
            _seal_into(key, bytes(signer._keypair))
            key.save()
    except IntegrityError:
        if not ManagedKey.objects.filter(public_key=key.public_key).exists():
            raise
        raise ManagedKeyExists(key.public_key)
    if key.location == KeyLocation.SECRETS:
        transaction.on_commit(lambda: _move_to_secrets_file(key), robust=True)
    key._unsealed = None
    return key


def managed_key_generate(*, location: str = KeyLocation.DATABASE, save: bool = True) -> ManagedKey:
    """``save=False``: held in memory, not sealed yet (a service's network phase signs with
    it; its write phase seals and stores it with ``managed_key_store``)."""
    key = _unsealed(Keypair(), location)
    return managed_key_store(key) if save else key


def managed_key_import(*, secret: str, location: str = KeyLocation.DATABASE, expected_public_key: str | None = None, save: bool = True) -> ManagedKey:
    raw = _parse_secret(secret)
    keypair = Keypair.from_bytes(raw)
    public_key = str(keypair.pubkey())
    if expected_public_key and expected_public_key != public_key:
        raise InvalidPrivateKey(f"The private key belongs to {public_key}, not {expected_public_key}.")
    # Checked now and again by the unique column when the key is stored (an import of the
    # same key committing concurrently): 409 DUPLICATE_KEY either way.
    if ManagedKey.objects.filter(public_key=public_key).exists():
        raise ManagedKeyExists(public_key)
    key = _unsealed(keypair, location)
    return managed_key_store(key) if save else key


@dataclass(frozen=True, repr=False)
class _KeySigner:
    """Signs with a decrypted key for its own (short) lifetime; never pickled or shown."""

    _keypair: Keypair

    def pubkey(self) -> Pubkey:
        return self._keypair.pubkey()

    def sign_message(self, message: bytes) -> Signature:
        return self._keypair.sign_message(message)

    def __repr__(self) -> str:
        return f"<signer {self._keypair.pubkey()}>"

    def __reduce__(self):
        raise TypeError("signers cannot be pickled")


def managed_key_signer(*, key: ManagedKey) -> _KeySigner:
    unsealed = getattr(key, "_unsealed", None)
    if unsealed is not None:
        return unsealed  # not stored yet: the network phase signs with the key in memory
    return _KeySigner(Keypair.from_bytes(_open(key)))


def managed_key_export(*, key: ManagedKey) -> str:
    """The base58 64-byte secret key. Only the role-gated, audited export service
    (accounts.services.account_private_key_export) may call this."""
    return base58.b58encode(_open(key))


# --- rotation ------------------------------------------------------------------------------
#
# Every value sealed under a master key is either a managed key's wrapped DEK (rows of
# ManagedKey) or a secret sealed with ``secret_seal`` and stored by an area (webhook
# credentials of instruments, ...). Areas register their stores here (apps depend
# downward: custody knows no area), so rotation re-seals all of them and retirement can
# prove that no value still needs a key. Retiring is a separate, explicit step: a value
# sealed concurrently under the old key (a process that read the keyring before the
# rotation) must never be stranded by a key dropped automatically (docs/custody.md).


@dataclass(frozen=True)
class SealedStore:
    """Where an area keeps values sealed with ``secret_seal``.

    ``references()`` counts stored values per master key id; ``reseal(current)`` re-seals
    every value not under ``current`` (each row locked while it is rewritten, so a
    concurrent edit is not lost) and returns how many it re-sealed."""

    name: str
    references: Callable[[], Counter]
    reseal: Callable[[bytes], int]


_STORES: dict[str, SealedStore] = {}
_BATCH = 200


def register_sealed_store(store: SealedStore) -> None:
    _STORES[store.name] = store


def _managed_key_references() -> Counter:
    return Counter(dict(ManagedKey.objects.order_by().values("master_key_id").annotate(n=Count("pk")).values_list("master_key_id", "n")))


def _rewrap_managed_keys(current: bytes) -> int:
    current_id, count = master_key_id(current), 0
    while True:
        with transaction.atomic():
            batch = list(ManagedKey.objects.select_for_update().exclude(master_key_id=current_id).order_by("pk")[:_BATCH])
            for key in batch:
                aad = _WRAP_AAD + key.public_key.encode()
                dek = AESGCM(_master_by_id(key.master_key_id)).decrypt(bytes(key.wrap_nonce), bytes(key.wrapped_dek), aad)
                key.wrap_nonce = secrets.token_bytes(12)
                key.wrapped_dek = AESGCM(current).encrypt(key.wrap_nonce, dek, aad)
                key.master_key_id = current_id
                key.rotated_at = timezone.now()
                key.save(update_fields=["wrap_nonce", "wrapped_dek", "master_key_id", "rotated_at"])
        count += len(batch)
        if len(batch) < _BATCH:
            return count


def sealed_references() -> Counter:
    """How many stored sealed values each master key id wraps, over every store."""
    total = _managed_key_references()
    for store in _STORES.values():
        total.update(store.references())
    return total


def _reseal_pass(current: bytes) -> tuple[int, int]:
    """One pass over every store; returns (managed keys re-wrapped, secrets re-sealed)."""
    return _rewrap_managed_keys(current), sum(store.reseal(current) for store in _STORES.values())


@dataclass(frozen=True)
class RotationResult:
    rewrapped: int
    resealed: int
    master_key_id: str
    #: master key id → values still sealed under it (empty once rotation is complete)
    still_referenced: dict[str, int]


def master_key_rotate(*, new_key: bytes | None = None, passes: int = 3) -> RotationResult:
    """Re-seal every sealed value (managed keys' DEKs and registered secrets) under the
    current master key. Old keys stay in the keyring: retire them with
    ``master_key_retire`` once it proves nothing references them.

    Key-file mode: a new key is generated (unless given) and written first in the file,
    the old keys after it. Environment mode: the operator first puts the new key first in
    LEDGER_MASTER_KEY, old ones after it (docs/custody.md). Passes repeat while values
    sealed under an old key appear (a concurrent seal by a process that read the keyring
    before the change), up to ``passes``; whatever remains is reported.
    """
    if settings.LEDGER_MASTER_KEY:
        ring = keyring()
        if new_key is not None and master_key_id(new_key) != master_key_id(ring[0]):
            raise CustodyError("With LEDGER_MASTER_KEY set, put the new key first in LEDGER_MASTER_KEY (old keys after it) and run rotation without --new-key.")
        current = ring[0]
    else:
        path = Path(settings.LEDGER_MASTER_KEY_FILE)
        old = _key_file_entries(path)
        current = new_key or secrets.token_bytes(32)
        _write_private_file(path, "\n".join(encode_master_key(k) for k in [current, *[k for k in old if k != current]]) + "\n")
    current_id = master_key_id(current)
    secrets_files_complete()
    rewrapped = resealed = 0
    remaining: dict[str, int] = {}
    for _ in range(max(1, passes)):
        keys, values = _reseal_pass(current)
        rewrapped, resealed = rewrapped + keys, resealed + values
        remaining = {kid: n for kid, n in sealed_references().items() if kid != current_id and n}
        if not remaining:
            break
    return RotationResult(rewrapped, resealed, current_id, remaining)


def master_key_retire(*, key_id: str) -> int:
    """Drop master key ``key_id`` from the key file once no stored value references it;
    returns how many keys the keyring still holds. Environment mode: only verifies (the
    operator then removes the key from LEDGER_MASTER_KEY). Never called by rotation."""
    ring = keyring()
    ids = [master_key_id(k) for k in ring]
    if key_id not in ids:
        raise CustodyError(f"Master key {key_id} is not in the keyring.")
    if key_id == ids[0]:
        raise CustodyError(f"Master key {key_id} is the current key; rotate to a new key first.")

    with transaction.atomic():
        # Exclusive sealing lock: every transaction that may have sealed under ``key_id``
        # has ended (its rows are counted now), and none seals until the file is rewritten.
        _sealing_lock(exclusive=True)
        count = sealed_references().get(key_id, 0)
        if count:
            raise CustodyError(f"{count} stored value(s) are still sealed under master key {key_id}; run rotate_master_key again, then retire.")
        if settings.LEDGER_MASTER_KEY:
            return len(ring)
        path = Path(settings.LEDGER_MASTER_KEY_FILE)
        kept = [k for k in _key_file_entries(path) if master_key_id(k) != key_id]
        _write_private_file(path, "\n".join(encode_master_key(k) for k in kept) + "\n")
    return len(kept)


# --- other secrets (webhook credentials) --------------------------------------------------

_SECRET_AAD = b"ledger-secret-v1:"


def secret_seal(*, value: str, purpose: str) -> dict:
    """Encrypt a non-key secret (a webhook API key, an OAuth client secret) under the
    current master key; ``purpose`` binds the ciphertext to where it is stored. Only in a
    write phase (the transaction that stores it), like a managed key."""
    _sealing_lock()
    master = keyring()[0]
    nonce = secrets.token_bytes(12)
    ciphertext = AESGCM(master).encrypt(nonce, value.encode(), _SECRET_AAD + purpose.encode())
    return {"kid": master_key_id(master), "nonce": nonce.hex(), "ciphertext": ciphertext.hex()}


def secret_key_id(sealed: dict) -> str | None:
    """The master key id a sealed secret is under."""
    return sealed.get("kid") if isinstance(sealed, dict) else None


def secret_reseal(*, sealed: dict, purpose: str, current: bytes) -> dict:
    """``sealed`` re-encrypted under ``current`` (unchanged if it is already)."""
    if sealed.get("kid") == master_key_id(current):
        return sealed
    value = secret_open(sealed=sealed, purpose=purpose)
    nonce = secrets.token_bytes(12)
    ciphertext = AESGCM(current).encrypt(nonce, value.encode(), _SECRET_AAD + purpose.encode())
    return {"kid": master_key_id(current), "nonce": nonce.hex(), "ciphertext": ciphertext.hex()}


def secret_open(*, sealed: dict, purpose: str) -> str:
    try:
        return AESGCM(_master_by_id(sealed["kid"])).decrypt(bytes.fromhex(sealed["nonce"]), bytes.fromhex(sealed["ciphertext"]), _SECRET_AAD + purpose.encode()).decode()
    except (InvalidTag, KeyError, ValueError):
        raise CustodyError("A stored secret does not decrypt: it was altered or moved.")
