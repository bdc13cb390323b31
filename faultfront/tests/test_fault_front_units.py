"""The fault front's parts without a node: rolling windows, seeded draws, signatures, orders."""

from __future__ import annotations

import base64

import pytest
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from faultfront.b58 import b58decode, b58encode
from faultfront.front import by_signature_within_slot, first_signature
from faultfront.lagging import LaggingView
from faultfront.limits import RollingLimits
from faultfront.profiles import PROFILES, check_profile, load_profile
from faultfront.seeded import draw


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_rolling_window_refuses_the_call_over_its_budget_until_the_oldest_ages_out():
    clock = Clock()
    limits = RollingLimits({"method:sendTransaction": (5, 1.0)}, clock=clock)
    for i in range(5):
        assert limits.admit({"method:sendTransaction": 1}) is None
        clock.now += 0.1
    assert limits.admit({"method:sendTransaction": 1}) == ("method:sendTransaction", 1)
    clock.now = 1000.0 + 1.0 + 0.01  # the first call left the window
    assert limits.admit({"method:sendTransaction": 1}) is None
    assert limits.admit({"method:getSlot": 100}) is None  # a method without a budget is not counted


def test_a_batch_over_the_budget_is_refused_whole_and_counts_for_nothing():
    clock = Clock()
    limits = RollingLimits({"total": (10, 10.0)}, clock=clock)
    assert limits.admit({"total": 8}) is None
    refused = limits.admit({"total": 3})
    assert refused == ("total", 10)  # the 8 calls age out together, 10 s from now
    assert limits.admit({"total": 2}) is None  # the refused batch took nothing


def test_each_method_has_its_own_default_budget():
    limits = RollingLimits({}, default=(2, 10.0), clock=Clock())
    assert limits.admit({"method:getSlot": 2, "total": 50}) is None
    assert limits.admit({"method:getBalance": 2}) is None
    assert limits.admit({"method:getSlot": 1})[0] == "method:getSlot"


def test_draws_depend_on_seed_stream_key_and_count_only():
    assert draw(7, "send", "sendTransaction", 3) == draw(7, "send", "sendTransaction", 3)
    values = {draw(seed, "send", "sendTransaction", k) for seed in range(3) for k in range(50)}
    assert len(values) == 150 and all(0 <= v < 1 for v in values)
    assert draw(7, "send", "sendTransaction", 3) != draw(8, "send", "sendTransaction", 3)


def test_the_signature_a_dropped_send_answers_is_the_transactions_own():
    payer = Keypair()
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey(), Hash.new_unique())
    tx = VersionedTransaction(message, [payer])
    raw = bytes(tx)
    assert first_signature([base64.b64encode(raw).decode(), {"encoding": "base64"}]) == str(tx.signatures[0])
    assert first_signature([b58encode(raw)]) == str(tx.signatures[0])  # base58, the default encoding
    assert first_signature(["not base58 0OIl"]) is None and first_signature([]) is None


def test_base58_round_trips_leading_zeros():
    for data in (b"", b"\0", b"\0\0\x01\x02", bytes(range(64))):
        assert b58decode(b58encode(data)) == data
    assert b58encode(bytes(32)) == "1" * 32


def test_entries_of_one_slot_are_ordered_by_signature_and_lose_transaction_index():
    sigs = [str(Keypair().sign_message(bytes([i]))) for i in range(6)]
    entries = [{"signature": s, "slot": 9 if i < 4 else 8, "transactionIndex": i} for i, s in enumerate(sigs)]
    out = by_signature_within_slot(entries)
    assert [e["slot"] for e in out] == [9, 9, 9, 9, 8, 8]
    assert all("transactionIndex" not in e for e in out)
    for slot in (9, 8):
        got = [b58decode(e["signature"]) for e in out if e["slot"] == slot]
        assert got == sorted(got, reverse=True)
    assert {e["signature"] for e in out} == set(sigs)


def test_the_lagging_view_answers_what_the_node_said_lag_slots_ago():
    view = LaggingView(3)
    key = "getBalance[]"
    assert view.answer(key, {"context": {"slot": 10}, "value": 0}) == ({"context": {"slot": 7}, "value": 0}, 7)
    # Nothing remembered from slot 9 or before: the oldest answer known, at the view's slot.
    assert view.answer(key, {"context": {"slot": 12}, "value": 5}) == ({"context": {"slot": 9}, "value": 0}, 9)
    assert view.answer(key, {"context": {"slot": 13}, "value": 5})[0]["value"] == 0  # 10 is the newest ≤ 10
    assert view.answer(key, {"context": {"slot": 15}, "value": 5}) == ({"context": {"slot": 12}, "value": 5}, 12)


def test_every_named_profile_loads_and_nonsense_is_refused():
    for name in PROFILES:
        assert load_profile(name)["name"] == name and PROFILES[name]["description"]
    with pytest.raises(ValueError):
        check_profile({"sends": {"drop": 0.8, "delay": 0.5}})
    with pytest.raises(ValueError):
        check_profile({"bogus": 1})
    with pytest.raises(ValueError):
        load_profile("no-such-profile")
    assert check_profile({"transient": {"hang": 1, "hang_seconds": 3600}})["transient"]["hang_seconds"] == 30


def test_stats_name_a_signature_sent_with_two_different_bytes_and_keep_the_peak():
    from faultfront.stats import Stats

    payer = Keypair()
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey(), Hash.new_unique())
    raw = bytes(VersionedTransaction(message, [payer]))
    send = {"method": "sendTransaction", "params": [base64.b64encode(raw).decode(), {"encoding": "base64"}]}
    stats = Stats()
    stats.admitted([send, send], ["sendTransaction"] * 2, first_signature)  # a resend: the very same bytes
    seen = stats.as_dict({})
    assert seen["sends"] == 1 and seen["signatures_with_two_bytes"] == [] and seen["calls"] == {"sendTransaction": 2}
    other = {"method": "sendTransaction", "params": [base64.b64encode(raw[:-1] + bytes([raw[-1] ^ 1])).decode(), {"encoding": "base64"}]}
    stats.admitted([other], ["sendTransaction"], first_signature)  # other bytes under the same signature
    assert stats.as_dict({})["signatures_with_two_bytes"] == [first_signature(send["params"])]
    limits = RollingLimits({"total": (10, 1.0)}, clock=Clock())
    limits.admit({"total": 4})
    limits.admit({"total": 3})
    assert limits.admit({"total": 5}) is not None and limits.peak == {"total": 7}


def test_the_lagging_view_never_answers_a_slot_with_what_the_node_said_before_that_slot_ended():
    # The node answers from its open slot: a read in slot 206 may precede a write of 206 (a
    # durable nonce transfer landing there). A real node's slot-206 answer has that write, so
    # the read stands for slot 205, and a minContextSlot of 206 waits for a read taken later.
    view = LaggingView(8)
    key = "getMultipleAccounts[]"
    view.answer(key, {"context": {"slot": 206}, "value": "before"})
    # Before the fix: ({"slot": 206}, "before"), which a minContextSlot of 206 accepted.
    assert view.answer(key, {"context": {"slot": 259}, "value": "after"}) == ({"context": {"slot": 205}, "value": "before"}, 205)
    assert view.answer(key, {"context": {"slot": 267}, "value": "after"}) == ({"context": {"slot": 258}, "value": "after"}, 258)
