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
from dataclasses import dataclass
from pathlib import Path

from ledger_project import base58
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from .errors import CustodyError, InvalidPrivateKey
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
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_private_file(path, encode_master_key(secrets.token_bytes(32)) + "\n")
    return [_decode_master(line) for line in path.read_text().splitlines() if line.strip()]


def keyring() -> list[bytes]:
    """Master keys, current first. From LEDGER_MASTER_KEY (comma-separated) or the key
    file (one per line; created 0600 with a fresh key on first use)."""
    if settings.LEDGER_MASTER_KEY:
        return [_decode_master(part) for part in settings.LEDGER_MASTER_KEY.split(",") if part.strip()]
    return _key_file_entries(Path(settings.LEDGER_MASTER_KEY_FILE))


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
    return Path(settings.LEDGER_SECRETS_DIR) / f"{public_key}.json"


def _store_ciphertext(key: ManagedKey, nonce: bytes, ciphertext: bytes) -> None:
    if key.location == KeyLocation.SECRETS:
        path = _secrets_path(key.public_key)
        _write_private_file(path, json.dumps({"publicKey": key.public_key, "nonce": nonce.hex(), "ciphertext": ciphertext.hex()}))
        key.secret_ref = path.name
        key.key_nonce, key.ciphertext = b"", b""
    else:
        key.key_nonce, key.ciphertext = nonce, ciphertext


def _load_ciphertext(key: ManagedKey) -> tuple[bytes, bytes]:
    if key.location == KeyLocation.SECRETS:
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


def _seal(public_key: str, secret: bytes, location: str) -> ManagedKey:
    master = keyring()[0]
    dek = AESGCM.generate_key(bit_length=256)
    key_nonce = secrets.token_bytes(12)
    ciphertext = AESGCM(dek).encrypt(key_nonce, secret, _KEY_AAD + public_key.encode())
    wrap_nonce = secrets.token_bytes(12)
    wrapped = AESGCM(master).encrypt(wrap_nonce, dek, _WRAP_AAD + public_key.encode())
    key = ManagedKey(public_key=public_key, location=location, master_key_id=master_key_id(master), wrap_nonce=wrap_nonce, wrapped_dek=wrapped)
    _store_ciphertext(key, key_nonce, ciphertext)
    return key


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


def managed_key_generate(*, location: str = KeyLocation.DATABASE, save: bool = True) -> ManagedKey:
    """``save=False``: sealed but not stored yet (a service's network phase signs with it
    and stores it in its write phase)."""
    keypair = Keypair()
    key = _seal(str(keypair.pubkey()), bytes(keypair), location)
    if save:
        key.save()
    return key


def managed_key_import(*, secret: str, location: str = KeyLocation.DATABASE, expected_public_key: str | None = None, save: bool = True) -> ManagedKey:
    raw = _parse_secret(secret)
    public_key = str(Keypair.from_bytes(raw).pubkey())
    if expected_public_key and expected_public_key != public_key:
        raise InvalidPrivateKey(f"The private key belongs to {public_key}, not {expected_public_key}.")
    if ManagedKey.objects.filter(public_key=public_key).exists():
        raise CustodyError(f"A managed key for {public_key} exists already.")
    key = _seal(public_key, raw, location)
    if save:
        key.save()
    return key


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
    return _KeySigner(Keypair.from_bytes(_open(key)))


def managed_key_export(*, key: ManagedKey) -> str:
    """The base58 64-byte secret key. Only the role-gated, audited export service
    (accounts.services.account_private_key_export) may call this."""
    return base58.b58encode(_open(key))


def master_key_rotate(*, new_key: bytes | None = None) -> tuple[int, str]:
    """Re-wrap every data key under a new master key; returns (count, new key id).

    Key-file mode: a new key is generated (unless given), the file is rewritten as
    [new, old...] first, every data key re-wrapped in one database transaction, then the
    old keys are dropped from the file. Environment mode: the operator first puts the new
    key first in LEDGER_MASTER_KEY with the old ones after it, runs this, then removes the
    old ones (docs/custody.md).
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
    count = 0
    with transaction.atomic():
        for key in ManagedKey.objects.select_for_update().exclude(master_key_id=current_id).order_by("pk"):
            dek = AESGCM(_master_by_id(key.master_key_id)).decrypt(bytes(key.wrap_nonce), bytes(key.wrapped_dek), _WRAP_AAD + key.public_key.encode())
            key.wrap_nonce = secrets.token_bytes(12)
            key.wrapped_dek = AESGCM(current).encrypt(key.wrap_nonce, dek, _WRAP_AAD + key.public_key.encode())
            key.master_key_id = current_id
            key.rotated_at = timezone.now()
            key.save(update_fields=["wrap_nonce", "wrapped_dek", "master_key_id", "rotated_at"])
            count += 1
    if not settings.LEDGER_MASTER_KEY:
        _write_private_file(Path(settings.LEDGER_MASTER_KEY_FILE), encode_master_key(current) + "\n")
    return count, current_id


# --- other secrets (webhook credentials) --------------------------------------------------

_SECRET_AAD = b"ledger-secret-v1:"


def secret_seal(*, value: str, purpose: str) -> dict:
    """Encrypt a non-key secret (a webhook API key, an OAuth client secret) under the
    current master key; ``purpose`` binds the ciphertext to where it is stored."""
    master = keyring()[0]
    nonce = secrets.token_bytes(12)
    ciphertext = AESGCM(master).encrypt(nonce, value.encode(), _SECRET_AAD + purpose.encode())
    return {"kid": master_key_id(master), "nonce": nonce.hex(), "ciphertext": ciphertext.hex()}


def secret_open(*, sealed: dict, purpose: str) -> str:
    try:
        return AESGCM(_master_by_id(sealed["kid"])).decrypt(bytes.fromhex(sealed["nonce"]), bytes.fromhex(sealed["ciphertext"]), _SECRET_AAD + purpose.encode()).decode()
    except (InvalidTag, KeyError, ValueError):
        raise CustodyError("A stored secret does not decrypt: it was altered or moved.")
