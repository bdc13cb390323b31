"""The price_feed program at its genesis id on the shared local node: every instruction's
happy path, driven with solders transactions through an unmodified solana-py client. The
feed account is read back with ``get_account_info`` and decoded here with ``struct`` from
the byte layout docs/programs.md publishes (not with our decoder), and the decoder is held
to the same bytes."""

from __future__ import annotations

import hashlib
import struct
from decimal import Decimal

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.constants import TOKEN_PROGRAM_ID

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID
from programs.price_feed import client
from programs.tests.feedkit import JOB, PRICE_FEED, FeedWorld, account_data, compute_units, landed_slot, node_clock
from transactions.tests.chainkit import send

pytestmark = pytest.mark.chain

# docs/programs.md, "price_feed": the header, then 8 ring entries.
HEADER = struct.Struct("<BBBBiQqqQqq32s32s32s")
ENTRY = struct.Struct("<QqqQ")
FIELDS = ("kind", "version", "ring_len", "ring_head", "exponent", "round", "value", "observed_at", "slot", "unix_time", "max_staleness", "authority", "mint", "job_hash")


def read_feed(chain, address: Pubkey) -> dict:
    """The feed as any client reads it: owner, size, header fields, ring slots by index."""
    info = chain.get_account_info(address).value
    assert info.owner == PRICE_FEED
    data = bytes(info.data)
    assert len(data) == 408 == HEADER.size + 8 * ENTRY.size
    feed = dict(zip(FIELDS, HEADER.unpack_from(data, 0)))
    feed["ring"] = [ENTRY.unpack_from(data, HEADER.size + i * ENTRY.size) for i in range(8)]
    feed["lamports"] = info.lamports
    return feed


@pytest.fixture
def world(chain):
    return FeedWorld.new(chain)


def test_initialize_records_the_settings_and_no_reading(world):
    feed = world.create(exponent=-6, max_staleness=900)
    raw = read_feed(world.chain, feed)
    assert raw["lamports"] == world.chain.get_minimum_balance_for_rent_exemption(408).value
    assert (raw["kind"], raw["version"], raw["ring_len"], raw["ring_head"]) == (3, 1, 0, 0)
    assert (raw["exponent"], raw["max_staleness"]) == (-6, 900)
    assert (raw["round"], raw["value"], raw["observed_at"], raw["slot"], raw["unix_time"]) == (0, 0, 0, 0, 0)
    assert raw["authority"] == bytes(world.authority.pubkey()) and raw["mint"] == bytes(world.mint)
    assert raw["job_hash"] == hashlib.sha256(JOB.encode()).digest()
    assert raw["ring"] == [(0, 0, 0, 0)] * 8
    state = world.state()
    assert (state.exponent, state.max_staleness, state.round, state.ring) == (-6, 900, 0, ())
    assert (state.authority, state.mint, state.job_hash) == (world.authority.pubkey(), world.mint, raw["job_hash"])
    assert not state.fresh(now=node_clock(world.chain)[1], max_age=10**9)  # no reading yet


def test_updates_record_the_node_clock_and_fill_the_ring_newest_first(world):
    feed = world.create(exponent=-2)
    _, now = node_clock(world.chain)
    signature = world.update(1, 12_345, now - 30)
    slot = landed_slot(world.chain, signature)
    raw = read_feed(world.chain, feed)
    assert (raw["round"], raw["value"], raw["observed_at"], raw["slot"]) == (1, 12_345, now - 30, slot)
    assert raw["unix_time"] == world.chain.get_block_time(slot).value  # the Clock of the slot it landed in
    assert (raw["ring_len"], raw["ring_head"], raw["ring"][0]) == (1, 0, (1, 12_345, now - 30, slot))
    assert compute_units(world.chain, signature) < 1_000
    assert world.state().price == Decimal("123.45")

    # Ten more in one transaction (negative values allowed; equal observation times too):
    # the ring keeps the last eight, newest at ring_head.
    readings = [(round_, -round_ * 100, now - 20 + round_ // 2) for round_ in range(2, 12)]
    signature = send(world.chain, world.payer, [world.update_ix(*r) for r in readings], [world.authority], v0=False)
    slot = landed_slot(world.chain, signature)
    raw = read_feed(world.chain, feed)
    assert (raw["round"], raw["value"], raw["observed_at"], raw["slot"]) == (11, -1_100, now - 15, slot)
    assert (raw["ring_len"], raw["ring_head"]) == (8, (11 - 1) % 8)  # the first reading went to slot 0
    by_round = {entry[0]: entry for entry in raw["ring"]}
    assert sorted(by_round) == list(range(4, 12))  # rounds 1-3 were overwritten
    assert all(by_round[r] == (r, v, o, slot) for r, v, o in readings if r >= 4)
    state = world.state()
    assert [e.round for e in state.ring] == list(range(11, 3, -1))
    assert state.ring[0] == client.RingEntry(11, -1_100, now - 15, slot)
    assert (state.round, state.value, state.observed_at, state.slot, state.unix_time) == (11, -1_100, now - 15, slot, raw["unix_time"])
    assert state.price == Decimal("-11.00") and state.fresh(now=now, max_age=60) and not state.fresh(now=now + 100, max_age=60)


def test_set_authority_hands_the_feed_over(world):
    world.create()
    _, now = node_clock(world.chain)
    heir = Keypair()
    send(world.chain, world.payer, [client.set_authority(PRICE_FEED, feed=world.feed.pubkey(), authority=world.authority.pubkey(), new_authority=heir.pubkey())], [world.authority], v0=False)
    assert read_feed(world.chain, world.feed.pubkey())["authority"] == bytes(heir.pubkey())
    assert world.refused(world.update_ix(1, 5, now)) == "AuthorityMismatch"
    send(world.chain, world.payer, [world.update_ix(1, 5, now, authority=heir)], [heir], v0=False)
    assert world.state().value == 5 and world.state().authority == heir.pubkey()


def test_set_job_hash_records_the_new_definition(world):
    world.create()
    new = client.job_hash("GET https://prices.example/v2/ACME")
    send(world.chain, world.payer, [client.set_job_hash(PRICE_FEED, feed=world.feed.pubkey(), authority=world.authority.pubkey(), job_hash=new)], [world.authority], v0=False)
    assert read_feed(world.chain, world.feed.pubkey())["job_hash"] == new == hashlib.sha256(b"GET https://prices.example/v2/ACME").digest()


def test_close_pays_the_recipient_and_the_address_can_hold_a_new_feed(world):
    feed = world.create()
    _, now = node_clock(world.chain)
    world.update(3, 99, now)
    recipient = Keypair().pubkey()
    rent = world.chain.get_balance(feed).value
    send(world.chain, world.payer, [client.close(PRICE_FEED, feed=feed, authority=world.authority.pubkey(), recipient=recipient)], [world.authority], v0=False)
    assert world.chain.get_account_info(feed).value is None
    assert world.chain.get_balance(recipient).value == rent
    assert world.refused(world.update_ix(4, 1, now)) == "FeedNotFound"
    # The keypair's holder may create a feed there again: a fresh one (round 0, empty ring).
    send(world.chain, world.payer, world.create_ixs(world.feed, exponent=0), [world.feed, world.authority], v0=False)
    raw = read_feed(world.chain, feed)
    assert (raw["round"], raw["ring_len"], raw["exponent"]) == (0, 0, 0)
    world.update(1, 7, now)
    assert world.state().round == 1


def test_a_feed_for_a_token_2022_mint(chain):
    world = FeedWorld.new(chain, program=TOKEN_2022_PROGRAM_ID)
    feed = world.create(exponent=18)
    assert read_feed(chain, feed)["mint"] == bytes(world.mint) and world.state().exponent == 18
    assert chain.get_account_info(world.mint).value.owner == TOKEN_2022_PROGRAM_ID != TOKEN_PROGRAM_ID
    assert account_data(chain, feed)[:2] == b"\x03\x01"
