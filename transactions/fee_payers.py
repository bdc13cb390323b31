"""The platform's default fee payer per cluster.

On CHAIN_LOCALNET the fee payer is funded by airdrop whenever it runs low; on other
clusters operators fund it (its address is in the admin and in /healthz-adjacent docs).
The nonce pool, the platform's other signer, is transactions/nonce_pool.py.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import IntegrityError, transaction
from solders.pubkey import Pubkey


from chain.rpc import is_localnet, rpc_for
from .models import PlatformFeePayer
from .platform_keys import platform_addresses_forget

logger = logging.getLogger("ledger.transactions")

LOCALNET_MIN_BALANCE = 10 * 10**9
LOCALNET_TOP_UP = 1_000 * 10**9
_checked: dict[str, float] = {}
_lock = threading.Lock()


#: cluster → (loaded at, row), per process: a query (and its key's row) less on every
#: request. The row never changes once created (one per cluster, read-only in the admin);
#: its key's sealing does when the master key rotates, so a row sealed under another master
#: key than the current one is read again (a retired key can never be the one a cached row
#: needs). FEE_PAYER_CACHE_SECONDS bounds the rest (a row changed by hand).
FEE_PAYER_CACHE_SECONDS = 60.0
_rows: dict[str, tuple[float, PlatformFeePayer]] = {}


def fee_payer_cache_clear() -> None:
    _rows.clear()


def _fee_payer_row(cluster: str) -> PlatformFeePayer:
    from custody.services import current_master_key_id

    hit = _rows.get(cluster)
    if hit is not None and time.monotonic() - hit[0] < FEE_PAYER_CACHE_SECONDS and hit[1].managed_key.master_key_id == current_master_key_id():
        return hit[1]
    loaded_at = time.monotonic()
    outside_transaction = not transaction.get_connection().in_atomic_block
    row = _load_fee_payer_row(cluster)
    if outside_transaction:  # else it may have just been created in a transaction that rolls back
        _rows[cluster] = (loaded_at, row)
    return row


def _load_fee_payer_row(cluster: str) -> PlatformFeePayer:
    from custody.services import managed_key_generate

    query = PlatformFeePayer.objects.select_related("managed_key").filter(cluster=cluster).order_by()  # unique: no ORDER BY
    row = next(iter(query[:1]), None)
    if row is not None:
        return row
    platform_addresses_forget()
    try:
        with transaction.atomic():
            return PlatformFeePayer.objects.create(cluster=cluster, managed_key=managed_key_generate())
    except IntegrityError:  # another process created it first
        return PlatformFeePayer.objects.select_related("managed_key").get(cluster=cluster)


def platform_fee_payer(cluster: str):
    """SignerSpec of the cluster's platform fee payer (funded on localnet)."""
    from .specs import SignerSpec

    row = _fee_payer_row(cluster)
    pubkey = Pubkey.from_string(row.managed_key.public_key)
    if is_localnet(cluster):
        ensure_localnet_funds(cluster, pubkey)
    return SignerSpec(pubkey, row.managed_key, platform=True)


def ensure_localnet_funds(cluster: str, pubkey: Pubkey, minimum: int = LOCALNET_MIN_BALANCE) -> None:
    # Checked at most every 10 s per process: an airdrop is cheap, a balance call per
    # request is not free.
    key = f"{cluster}:{pubkey}"
    with _lock:
        if time.monotonic() - _checked.get(key, 0) < 10:
            return
        _checked[key] = time.monotonic()
    rpc = rpc_for(cluster)
    if rpc.balance(pubkey) < minimum:
        signature = rpc.airdrop(pubkey, LOCALNET_TOP_UP)
        # None: another process's identical top-up (same slot, same bytes) already landed.
        for _ in range(100 if signature is not None else 0):
            status = rpc.signature_statuses([signature])[0]
            if status is not None:
                break
            time.sleep(0.05)
