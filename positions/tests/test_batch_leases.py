"""A batch refused part-way through its network phase (admission's 503 CHAIN_BUSY after some
packs were built) gives back what the built packs hold, their durable-nonce leases, at
once rather than at the lease reclaim (positions/batches.py, ``transfer_batch`` and
``rebuilt_after``). The phases are stand-ins: what is checked is the release, whatever
the kind of batch."""

from __future__ import annotations

import pytest

from ledger_project.api.errors import LedgerError
from positions import batch_bisect, batches
from tenancy.context import OperationContext
from transactions.admission import SendBacklogFull


class _Held:
    """A built pack's Prepared: counts its releases."""

    def __init__(self, released: list, name: str):
        self.released, self.name = released, name

    def release(self) -> None:
        self.released.append(self.name)


def _refusal() -> SendBacklogFull:
    return SendBacklogFull("CHAIN_LOCALNET", 120, 1.0, 60)


def _kind(monkeypatch, build, pack=lambda ctx, items: [batches._Pack([item]) for item in items]):
    def write(ctx, batch, packs):  # pragma: no cover - the refusal comes first
        raise AssertionError("the write phase is not reached")

    kind = batches.Kind(lambda ctx, item: None, None, pack, build, write, lambda item: None)
    monkeypatch.setattr(batches, "_kinds", lambda: {batches.BatchKind.TRANSFER: kind})


@pytest.mark.django_db
def test_a_refusal_after_some_packs_were_built_releases_their_leases(tenant, monkeypatch):
    released: list[str] = []

    def build(ctx, pack):
        if pack.items[0].index == 2:
            raise _refusal()
        pack.prepared = _Held(released, f"pack {pack.items[0].index}")
        return [pack]

    _kind(monkeypatch, build)
    op = OperationContext.system(tenant=tenant, cluster="CHAIN_LOCALNET")
    with pytest.raises(SendBacklogFull):
        batches.transfer_batch(op, items=[{"n": i} for i in range(4)])
    assert released == ["pack 0", "pack 1"]
    assert not batches.Batch.unscoped.exists()  # nothing stored


@pytest.mark.django_db
def test_a_refusal_while_a_split_pack_is_built_again_releases_the_parts_built(tenant, monkeypatch):
    """A pack the node refused is split and its parts built again; a 503 on a later part
    releases the parts built before it, and the packs built before the split pack."""
    released: list[str] = []
    refused_once = LedgerError("the node refused the pack")  # a 400: the pack is split

    def build(ctx, pack):
        indexes = [item.index for item in pack.items]
        if indexes == [1, 2, 3]:
            return batches.rebuilt_after(ctx, pack, refused_once, build)
        if indexes == [3]:
            raise _refusal()
        pack.prepared = _Held(released, f"pack {indexes}")
        return [pack]

    def pack(ctx, items):
        return [batches._Pack(items[:1]), batches._Pack(items[1:])]

    monkeypatch.setattr(batch_bisect, "split", lambda exc, items, config: (None, [[item] for item in items]))
    monkeypatch.setattr(batches, "transaction_config", lambda *args: None)
    _kind(monkeypatch, build, pack)
    op = OperationContext.system(tenant=tenant, cluster="CHAIN_LOCALNET")
    with pytest.raises(SendBacklogFull):
        batches.transfer_batch(op, items=[{"n": i} for i in range(4)])
    assert sorted(released) == ["pack [0]", "pack [1]", "pack [2]"]


@pytest.mark.django_db
def test_a_quota_met_part_way_fails_the_batch_whole_and_stores_nothing(tenant, monkeypatch):
    """A 429 (the organization's nonce lease quota) is "not now", not an item's own error:
    the batch is not stored with a rejected item (its x-request-id would replay the 429);
    the request fails whole, what was built is released, and the same id may be sent again."""
    from transactions.nonce_pool import NonceLeaseQuotaExceeded

    released: list[str] = []

    def build(ctx, pack):
        if pack.items[0].index == 1:
            raise NonceLeaseQuotaExceeded(held=8, retry_after=5)
        pack.prepared = _Held(released, f"pack {pack.items[0].index}")
        return [pack]

    _kind(monkeypatch, build)
    op = OperationContext.system(tenant=tenant, cluster="CHAIN_LOCALNET")
    with pytest.raises(NonceLeaseQuotaExceeded):
        batches.transfer_batch(op, items=[{"n": i} for i in range(3)])
    assert released == ["pack 0"] and not batches.Batch.unscoped.exists()
