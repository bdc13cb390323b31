"""Backend players' key-encryption keys and the envelope every backend secret is sealed in
(docs/threshold-signing.md, "Backend share storage").

Each backend player (settings.LEDGER_MPC_BACKEND_PLAYERS) has its own keyring, distinct from
the master key and from every other player's: LEDGER_MPC_PLAYER_KEYS_<CODE> (comma-separated
base64 keys, current first) or the key file LEDGER_MPC_PLAYER_KEY_DIR/<CODE>.key (one per
line; only embedded mode creates it). One leaked key therefore opens one player's secrets —
below the threshold of any account with t >= 2.

A sealed value is ``{"kid", "wrapNonce", "wrappedDek", "nonce", "ciphertext"}`` (hex): a random
data key encrypts the secret (AES-256-GCM) and the player's current key wraps the data key;
both layers carry ``purpose`` as associated data (the account's group key, the player, its
identifier and the share's generation; a signing session and commitment; a DKG session), so
a value moved to another row, player, account or generation does not open. Values are sealed
only inside a database transaction, under custody's sealing lock, so a player key retired by
``player_key_retire`` never strands a value sealed concurrently (custody's rule).
"""

from __future__ import annotations

import secrets
from collections import Counter
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from custody import services as custody
from custody.errors import CustodyError


_DEK_AAD = b"ledger/threshold/dek-wrap/v1:"
_VALUE_AAD = b"ledger/threshold/value/v1:"


def player_codes() -> list[str]:
    return list(settings.LEDGER_MPC_BACKEND_PLAYERS)


def _key_file(code: str) -> Path:
    return Path(settings.LEDGER_MPC_PLAYER_KEY_DIR) / f"{code}.key"


def _file_entries(code: str) -> list[bytes]:
    path = _key_file(code)
    if not path.exists():
        if not settings.LEDGER_EMBEDDED:
            raise CustodyError(f"Backend player {code} has no key: set LEDGER_MPC_PLAYER_KEYS_{code} or create {path} (docs/configuration.md).")
        custody._write_private_file(path, custody.encode_master_key(secrets.token_bytes(32)) + "\n")
    return [custody._decode_master(line) for line in path.read_text().splitlines() if line.strip()]


def player_keyring(code: str) -> list[bytes]:
    """The player's keys, current first."""
    if code not in settings.LEDGER_MPC_BACKEND_PLAYERS:
        raise CustodyError(f"{code} is not a backend player of this service.")
    configured = (settings.LEDGER_MPC_PLAYER_KEYS or {}).get(code) or ""
    if configured.strip(","):
        return [custody._decode_master(part) for part in configured.split(",") if part.strip()]
    return _file_entries(code)


def key_id(key: bytes) -> str:
    # The master key's id function: equal keys have equal ids whoever holds them, which is
    # what the duplicate check compares.
    return custody.master_key_id(key)


def check_keyrings() -> None:
    """Refuse to start when two backend players share a key, or one shares the master key:
    one leak would then open two shares. Key ids only are compared (docs/threshold-signing.md)."""
    seen: dict[str, str] = {}
    master_ids = set()
    if settings.LEDGER_MASTER_KEY.strip(",") or Path(settings.LEDGER_MASTER_KEY_FILE).exists():
        master_ids = {custody.master_key_id(k) for k in custody.keyring()}
    for code in settings.LEDGER_MPC_BACKEND_PLAYERS:
        try:
            ring = player_keyring(code)
        except CustodyError as exc:
            raise ImproperlyConfigured(exc.message)
        for key in ring:
            kid = key_id(key)
            if kid in master_ids:
                raise ImproperlyConfigured(f"Backend player {code} has a key that is also a master key ({kid}): each player needs its own key (docs/threshold-signing.md).")
            if seen.get(kid, code) != code:
                raise ImproperlyConfigured(f"Backend players {seen[kid]} and {code} share a key ({kid}): each player needs its own key (docs/threshold-signing.md).")
            seen[kid] = code


def _by_id(code: str, kid: str) -> bytes:
    for key in player_keyring(code):
        if key_id(key) == kid:
            return key
    raise CustodyError(f"Key {kid} of backend player {code} is not in its keyring; cannot unwrap.")


def seal(code: str, plaintext: bytes, purpose: str) -> dict:
    """Seal ``plaintext`` for backend player ``code`` under its current key (inside a
    database transaction: a service's write phase or a worker's step)."""
    custody._sealing_lock()
    kek = player_keyring(code)[0]
    aad = purpose.encode()
    dek = AESGCM.generate_key(bit_length=256)
    nonce, wrap_nonce = secrets.token_bytes(12), secrets.token_bytes(12)
    return {
        "kid": key_id(kek),
        "wrapNonce": wrap_nonce.hex(),
        "wrappedDek": AESGCM(kek).encrypt(wrap_nonce, dek, _DEK_AAD + aad).hex(),
        "nonce": nonce.hex(),
        "ciphertext": AESGCM(dek).encrypt(nonce, plaintext, _VALUE_AAD + aad).hex(),
    }


def unseal(code: str, sealed: dict, purpose: str) -> bytes:
    aad = purpose.encode()
    try:
        dek = AESGCM(_by_id(code, sealed["kid"])).decrypt(bytes.fromhex(sealed["wrapNonce"]), bytes.fromhex(sealed["wrappedDek"]), _DEK_AAD + aad)
        return AESGCM(dek).decrypt(bytes.fromhex(sealed["nonce"]), bytes.fromhex(sealed["ciphertext"]), _VALUE_AAD + aad)
    except (InvalidTag, KeyError, ValueError, TypeError):
        raise CustodyError(f"A secret of backend player {code} does not decrypt: it was altered, or moved from another account, player or generation.")


def rewrap(code: str, sealed: dict, purpose: str, current: bytes) -> dict:
    """``sealed`` with its data key re-wrapped under ``current`` (the ciphertext is unchanged)."""
    if sealed.get("kid") == key_id(current):
        return sealed
    aad = purpose.encode()
    try:
        dek = AESGCM(_by_id(code, sealed["kid"])).decrypt(bytes.fromhex(sealed["wrapNonce"]), bytes.fromhex(sealed["wrappedDek"]), _DEK_AAD + aad)
    except (InvalidTag, KeyError, ValueError):
        raise CustodyError(f"A secret of backend player {code} does not decrypt: it was altered or moved.")
    wrap_nonce = secrets.token_bytes(12)
    return {**sealed, "kid": key_id(current), "wrapNonce": wrap_nonce.hex(), "wrappedDek": AESGCM(current).encrypt(wrap_nonce, dek, _DEK_AAD + aad).hex()}


# --- rotation of one player's keyring ---------------------------------------------------------
#
# Every sealed value lives in a JSON column named in SEALED_COLUMNS: (model, column, player
# code field, purpose of a row). Rotation re-wraps each value not under the player's current
# key; retirement proves no value still needs the old key (under the exclusive sealing lock,
# as custody.master_key_retire does).


def _sealed_columns():
    from .models import DkgPlayer, SigningNonce, ThresholdShare
    from .purposes import dkg_state_purpose, nonce_purpose, share_purpose

    return [
        (ThresholdShare, "sealed", share_purpose),
        (SigningNonce, "sealed", nonce_purpose),
        (DkgPlayer, "sealed_state", dkg_state_purpose),
    ]


def player_key_references(code: str) -> Counter:
    """How many stored values of player ``code`` each of its key ids wraps."""
    total: Counter = Counter()
    for model, column, _ in _sealed_columns():
        for sealed in model.objects.filter(player_code=code, **{f"{column}__isnull": False}).values_list(column, flat=True).iterator():
            if sealed:
                total[sealed.get("kid")] += 1
    return total


def player_key_rotate(code: str, *, new_key: bytes | None = None) -> dict:
    """Re-wrap every value of backend player ``code`` under its current key. Key-file mode:
    a new key (generated unless given) is written first in the file. Environment mode: the
    operator first puts the new key first in LEDGER_MPC_PLAYER_KEYS_<CODE>."""
    configured = (settings.LEDGER_MPC_PLAYER_KEYS or {}).get(code) or ""
    if configured.strip(","):
        current = player_keyring(code)[0]
        if new_key is not None and key_id(new_key) != key_id(current):
            raise CustodyError(f"With LEDGER_MPC_PLAYER_KEYS_{code} set, put the new key first there and rotate without --new-key.")
    else:
        old = _file_entries(code)
        current = new_key or secrets.token_bytes(32)
        custody._write_private_file(_key_file(code), "\n".join(custody.encode_master_key(k) for k in [current, *[k for k in old if k != current]]) + "\n")
    current_id, rewrapped = key_id(current), 0
    for model, column, purpose in _sealed_columns():
        while True:
            with transaction.atomic():
                batch = list(model.objects.select_for_update().filter(player_code=code, **{f"{column}__isnull": False}).exclude(**{f"{column}__kid": current_id}).order_by("pk")[:200])
                for row in batch:
                    setattr(row, column, rewrap(code, getattr(row, column), purpose(row), current))
                    row.save(update_fields=[column])
            rewrapped += len(batch)
            if len(batch) < 200:
                break
    remaining = {kid: n for kid, n in player_key_references(code).items() if kid != current_id}
    return {"player": code, "keyId": current_id, "rewrapped": rewrapped, "stillReferenced": remaining, "at": timezone.now().isoformat()}


def player_key_retire(code: str, *, kid: str) -> int:
    """Drop key ``kid`` from player ``code``'s key file once nothing references it; returns
    how many keys remain. Environment mode verifies only."""
    ring = player_keyring(code)
    ids = [key_id(k) for k in ring]
    if kid not in ids:
        raise CustodyError(f"Key {kid} is not in the keyring of backend player {code}.")
    if kid == ids[0]:
        raise CustodyError(f"Key {kid} is backend player {code}'s current key; rotate first.")
    with transaction.atomic():
        custody._sealing_lock(exclusive=True)
        count = player_key_references(code).get(kid, 0)
        if count:
            raise CustodyError(f"{count} stored value(s) of backend player {code} are still sealed under {kid}; rotate again, then retire.")
        configured = (settings.LEDGER_MPC_PLAYER_KEYS or {}).get(code) or ""
        if configured.strip(","):
            return len(ring)
        kept = [k for k in _file_entries(code) if key_id(k) != kid]
        custody._write_private_file(_key_file(code), "\n".join(custody.encode_master_key(k) for k in kept) + "\n")
    return len(kept)
