"""Token balances record what each transaction left, in chain order, however confirmations
arrive — one at a time or many in one database transaction (positions/balances.py)."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import TransferCheckedParams, transfer_checked

from custody.models import ManagedKey
from positions.models import Position, PositionBalanceSnapshot
from tests.workers import paused_workers, wait_for
from transactions import services, settlement
from transactions.models import Transaction, TransactionStatus
from transactions.services import SignerSpec
from transactions.tests.chainkit import next_slot

from .kit import instrument, position, wallet
from .movekit import at, balance, mint, settled

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"


def sent_token_transfer(tenant, chain, owner: Keypair, source: Position, destination: Position, lamports: int) -> Transaction:
    """A transfer the service signed and sent (landed on the node), not yet confirmed by it."""
    ix = transfer_checked(TransferCheckedParams(
        program_id=TOKEN_PROGRAM_ID, source=Pubkey.from_string(source.address), mint=Pubkey.from_string(source.instrument.address),
        dest=Pubkey.from_string(destination.address), owner=owner.pubkey(), amount=lamports, decimals=source.instrument.decimals,
    ))
    with db_transaction.atomic():
        tx = services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", submit=False, instructions=[ix],
                                          signers=[SignerSpec(owner.pubkey(), ManagedKey.objects.get(public_key=str(owner.pubkey())))])
    Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
    assert settlement.transaction_submit(transaction_id=tx.pk)
    wait_for(lambda: chain.get_signature_statuses([Signature.from_string(tx.onchain_id)]).value[0] is not None, what="the transfer")
    return tx


@pytest.fixture
def funded_positions(api, celery_worker_process):
    alice_key = Keypair()
    alice = wallet(api, alice_key)
    bond = instrument(api, authority=alice, decimals=2)
    a_pos, b_pos = position(api, alice, bond), position(api, wallet(api), bond)
    settled(mint(api, at(a_pos), {"lamports": 10_000}))
    rows = {p.offchain_id: p for p in Position.unscoped.select_related("instrument").filter(offchain_id__in=[a_pos["offchainId"], b_pos["offchainId"]])}
    return alice_key, rows[uuid.UUID(a_pos["offchainId"])], rows[uuid.UUID(b_pos["offchainId"])]


def landed_slot(chain, tx: Transaction) -> int:
    return chain.get_signature_statuses([Signature.from_string(tx.onchain_id)]).value[0].slot


def history(pos: Position) -> list[tuple[int | None, int]]:
    return [(tx_id, int(amount)) for tx_id, amount in PositionBalanceSnapshot.objects.filter(position=pos).order_by("at", "pk").values_list("transaction_id", "amount")]


@pytest.mark.parametrize("together", [False, True], ids=["one_at_a_time", "one_chunk"])
@pytest.mark.django_db(transaction=True)
def test_token_transfers_confirmed_out_of_order_keep_balances_and_history_in_chain_order(api, tenant, chain, funded_positions, together):
    owner, source, destination = funded_positions
    before = history(destination)
    with paused_workers():  # this test confirms them itself, in the order it chooses
        first = sent_token_transfer(tenant, chain, owner, source, destination, 200)
        next_slot(chain)
        second = sent_token_transfer(tenant, chain, owner, source, destination, 300)
        rows = {tx.pk: tx for tx in Transaction.unscoped.filter(pk__in=[first.pk, second.pk])}
        if together:  # one chunk of a pump pass, the later transfer taken first
            assert settlement.transactions_follow([rows[second.pk], rows[first.pk]]) == {first.pk, second.pk}
        else:  # two workers, the one with the earlier transfer slower
            for tx in (second, first):
                settlement.transaction_confirm(transaction_id=tx.pk)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == second.status == TransactionStatus.CONFIRMED and first.slot < second.slot

    for pos, expected, entries in ((destination, 500, [(first.pk, 200), (second.pk, 500)]), (source, 9_500, [(first.pk, 9_800), (second.pk, 9_500)])):
        pos.refresh_from_db()
        pos.account.refresh_from_db()
        assert int(pos.account.token_balance) == expected == balance(chain, pos.address)
        assert pos.last_transaction_id == pos.account.last_transaction_id == second.pk
        assert history(pos)[-2:] == entries
    assert history(destination)[:-2] == before


@pytest.fixture
def two_owners(api, celery_worker_process):
    alice_key, bob_key = Keypair(), Keypair()
    alice = wallet(api, alice_key)
    bond = instrument(api, authority=alice, decimals=2)
    a_pos, b_pos = position(api, alice, bond), position(api, wallet(api, bob_key), bond)
    settled(mint(api, at(a_pos), {"lamports": 10_000}))
    rows = {p.offchain_id: p for p in Position.unscoped.select_related("instrument").filter(offchain_id__in=[a_pos["offchainId"], b_pos["offchainId"]])}
    return (alice_key, rows[uuid.UUID(a_pos["offchainId"])]), (bob_key, rows[uuid.UUID(b_pos["offchainId"])])


@pytest.mark.django_db(transaction=True)
def test_a_round_trip_within_one_slot_confirmed_backwards_leaves_the_chains_balances(api, tenant, chain, two_owners):
    """Alice pays Bob 200 and Bob pays it back in the same slot: both positions start and end
    at the same balance, so a balance's own value cannot place the two (the pump holders of
    two shards may apply them in either order). The order within the slot, read from the
    chain, does: applied backwards, the balances stay what the chain holds."""
    (alice, a_pos), (bob, b_pos) = two_owners
    with paused_workers():  # this test confirms them itself, in the order it chooses
        for _attempt in range(4):
            next_slot(chain)  # a fresh slot: 400 ms for both sends
            there = sent_token_transfer(tenant, chain, alice, a_pos, b_pos, 200)
            back = sent_token_transfer(tenant, chain, bob, b_pos, a_pos, 200)
            if landed_slot(chain, there) == landed_slot(chain, back):
                break
            for tx in (there, back):  # not one slot: apply in order and try again
                settlement.transaction_confirm(transaction_id=tx.pk)
        else:
            pytest.fail("two sends never landed in one slot")
        settlement.transaction_confirm(transaction_id=back.pk)
        settlement.transaction_confirm(transaction_id=there.pk)
    there.refresh_from_db()
    back.refresh_from_db()
    assert there.status == back.status == TransactionStatus.CONFIRMED and there.slot == back.slot
    for pos, expected in ((a_pos, 10_000), (b_pos, 0)):
        pos.refresh_from_db()
        pos.account.refresh_from_db()
        assert int(pos.account.token_balance) == expected == balance(chain, pos.address)
        assert history(pos)[-1] == (back.pk, expected)


@pytest.mark.django_db(transaction=True)
def test_a_transfer_leaves_its_mint_as_it_was_and_moves_only_the_instruments_markers(api, tenant, chain, funded_positions, monkeypatch):
    """A transfer names its mint; the mint's read matches the record, so the instrument is not
    re-resolved or re-saved (instruments/effects.mints_after): only its last transaction and
    sync markers move."""
    from instruments import effects as instrument_effects
    from instruments.models import FinancialInstrument

    owner, source, destination = funded_positions
    before = FinancialInstrument.unscoped.get(pk=source.instrument_id)
    synced = []
    monkeypatch.setattr(instrument_effects, "instrument_sync", lambda **kw: synced.append(kw) or kw["instrument"])
    with paused_workers():
        tx = sent_token_transfer(tenant, chain, owner, source, destination, 100)
        settlement.transaction_confirm(transaction_id=tx.pk)
    tx.refresh_from_db()
    after = FinancialInstrument.unscoped.get(pk=source.instrument_id)
    assert tx.status == TransactionStatus.CONFIRMED and synced == []
    assert after.last_transaction_id == tx.pk and after.synced_slot >= tx.slot and after.synced_at > before.synced_at
    assert (after.supply_onchain, after.mint_authority_id, after.decimals) == (before.supply_onchain, before.mint_authority_id, before.decimals)
