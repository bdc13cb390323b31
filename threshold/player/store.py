"""The player's local store: a directory of records, each encrypted under a passphrase.

``store.json`` holds the scrypt parameters and salt; the store key is
scrypt(passphrase, salt) and every record is its own file, sealed with AES-256-GCM under that
key (random 96-bit nonce) with the record's kind and name as associated data, so a file
copied over another does not open. Files are written atomically (temporary file, fsync,
rename, fsync of the directory) with mode 0600 in a 0700 directory; a process killed at any
point leaves either the old record or the new one. ``lock()`` serialises the operations
that must not interleave (consuming a nonce).

Layout (docs/threshold-signing.md, "The external player"):
    store.json                   format, KDF parameters, salt, passphrase check
    keys/<name>.json             key packages (frost-key-package)
    dkg/<session>.json           DKG / refresh state between rounds (frost-dkg-state)
    nonces/<key>/<session>.json  signing nonces, then the record of their one use
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import secrets
import tempfile
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

FORMAT = "frost-player-store"
RECORD_FORMAT = "frost-player-record"
VERSION = 1
DEFAULT_LOG_N = 15  # scrypt N = 2^15, r = 8, p = 1: 32 MiB and about 0.1 s per opening
MIN_LOG_N = 14
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_CHECK = b"frost-player-store passphrase check"


class StoreError(Exception):
    """The store is missing, damaged, or refuses the operation."""


class WrongPassphrase(StoreError):
    pass


def check_name(name: str, what: str = "name") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise StoreError(f"a {what} is 1-128 characters of letters, digits and . _ : - (starting with a letter or digit)")
    return name


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_private_dirs(folder: Path) -> None:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        new.mkdir(mode=0o700, exist_ok=True)


def write_atomic(path: Path, content: bytes) -> None:
    """Replace ``path`` with ``content`` (0600) so that a crash leaves the old or the new file."""
    _make_private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _derive(passphrase: str, salt: bytes, log_n: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=2**log_n, r=8, p=1).derive(passphrase.encode())


class Store:
    """Open with ``Store.create`` or ``Store.open``; never shows its key."""

    def __init__(self, path: Path, key: bytes):
        self.path = Path(path)
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return f"<frost player store {self.path}>"

    def __reduce__(self):
        raise TypeError("an open store cannot be pickled")

    @classmethod
    def create(cls, path, passphrase: str, *, log_n: int = DEFAULT_LOG_N) -> "Store":
        path = Path(path)
        if (path / "store.json").exists():
            raise StoreError(f"{path} already holds a store")
        if not passphrase:
            raise StoreError("the passphrase is empty")
        if not MIN_LOG_N <= log_n <= 22:
            raise StoreError(f"the scrypt cost (log2 N) must be from {MIN_LOG_N} to 22")
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        salt = secrets.token_bytes(16)
        key = _derive(passphrase, salt, log_n)
        nonce = secrets.token_bytes(12)
        header = {"format": FORMAT, "version": VERSION, "kdf": {"name": "scrypt", "logN": log_n, "r": 8, "p": 1, "salt": salt.hex()},
                  "cipher": "AES-256-GCM", "check": {"nonce": nonce.hex(), "ciphertext": AESGCM(key).encrypt(nonce, _CHECK, b"check").hex()}}
        write_atomic(path / "store.json", json.dumps(header, indent=2).encode())
        return cls(path, key)

    @classmethod
    def open(cls, path, passphrase: str) -> "Store":
        path = Path(path)
        try:
            header = json.loads((path / "store.json").read_text())
        except FileNotFoundError:
            raise StoreError(f"no store at {path} (create one with init)")
        except ValueError:
            raise StoreError(f"{path}/store.json is damaged")
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise StoreError(f"{path}/store.json is not a version {VERSION} store")
        kdf = header["kdf"]
        if kdf.get("name") != "scrypt" or kdf.get("r") != 8 or kdf.get("p") != 1 or not MIN_LOG_N <= kdf.get("logN", 0) <= 22:
            raise StoreError("unsupported key derivation parameters")
        key = _derive(passphrase, bytes.fromhex(kdf["salt"]), kdf["logN"])
        try:
            AESGCM(key).decrypt(bytes.fromhex(header["check"]["nonce"]), bytes.fromhex(header["check"]["ciphertext"]), b"check")
        except InvalidTag:
            raise WrongPassphrase("wrong passphrase for this store")
        return cls(path, key)

    # --- records ---------------------------------------------------------------------------

    def _file(self, kind: str, name: str) -> tuple[Path, bytes]:
        parts = kind.split("/")
        for part in parts:
            check_name(part, "record kind")
        check_name(name)
        return self.path.joinpath(*parts, f"{name}.json"), f"frost-player/v{VERSION}:{kind}/{name}".encode()

    def put(self, kind: str, name: str, record: dict) -> None:
        path, aad = self._file(kind, name)
        nonce = secrets.token_bytes(12)
        ciphertext = self._aead.encrypt(nonce, json.dumps(record).encode(), aad)
        sealed = {"format": RECORD_FORMAT, "version": VERSION, "nonce": nonce.hex(), "ciphertext": base64.b64encode(ciphertext).decode()}
        write_atomic(path, json.dumps(sealed).encode())

    def get(self, kind: str, name: str) -> dict | None:
        path, aad = self._file(kind, name)
        try:
            sealed = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except ValueError:
            raise StoreError(f"{path} is damaged")
        try:
            plaintext = self._aead.decrypt(bytes.fromhex(sealed["nonce"]), base64.b64decode(sealed["ciphertext"]), aad)
        except (InvalidTag, KeyError, ValueError):
            raise StoreError(f"{path} does not decrypt: it was altered or moved from another record")
        return json.loads(plaintext)

    def delete(self, kind: str, name: str) -> None:
        path, _ = self._file(kind, name)
        path.unlink(missing_ok=True)
        if path.parent.exists():
            _fsync_dir(path.parent)

    def names(self, kind: str) -> list[str]:
        folder = self.path.joinpath(*kind.split("/"))
        if not folder.is_dir():
            return []
        return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.is_file() and p.name.endswith(".json") and not p.name.startswith("."))

    @contextlib.contextmanager
    def lock(self):
        """An exclusive lock on the store (other processes wait)."""
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
