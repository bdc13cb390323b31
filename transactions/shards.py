"""Which pump shard a transaction belongs to (docs/transactions.md, "Shards").

A transaction's ``shard_key`` is a bucket in [0, BUCKETS): a stable hash of its ordering
key, fixed when the row is recorded. Shard ``s`` of a cluster's LEDGER_PUMP_SHARDS pumps the
buckets ``b`` with ``b % shards == s``. Buckets rather than shard numbers are stored so that
changing the shard count re-deals the buckets and never leaves a row no shard pumps.

The ordering key keeps together what must not be pumped by two holders at once:
- a durable-nonce transaction: its nonce account (one use at a time; the pump advances the
  nonce of one whose window is over, which must not race a send of the next use);
- otherwise the first signer that is not the fee payer — the authority whose balance the
  transaction moves (a position's owner, a mint authority, a new account's key), so one
  source's transactions are sent in the order they were accepted;
- otherwise the fee payer, which is then the authority itself.
"""

from __future__ import annotations

import zlib
from typing import Collection, Sequence

from django.conf import settings

BUCKETS = 256


def shard_count() -> int:
    """LEDGER_PUMP_SHARDS, between 1 and BUCKETS."""
    return max(1, min(BUCKETS, int(settings.LEDGER_PUMP_SHARDS)))


def ordering_key(*, nonce_account: str, fee_payer: str, required_signers: Sequence[str]) -> str:
    if nonce_account:
        return nonce_account
    return next((signer for signer in required_signers[1:] if signer != fee_payer), fee_payer)


def bucket_of(key: str) -> int:
    """A stable hash (the same in every process and release: not Python's ``hash``)."""
    return zlib.crc32(key.encode()) % BUCKETS


def shard_of(bucket: int) -> int:
    return bucket % shard_count()


def buckets_of(shards: Collection[int] | None) -> list[int] | None:
    """The buckets ``shards`` pump; None when they are every shard (no filter at all)."""
    count = shard_count()
    if shards is None or set(range(count)) <= set(shards):
        return None
    return [bucket for bucket in range(BUCKETS) if bucket % count in shards]
