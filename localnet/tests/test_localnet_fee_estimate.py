"""The local node answers getPriorityFeeEstimate as the RPC providers document it
(docs/localnet-rpc.md, "getPriorityFeeEstimate"): levels are percentiles of the compute-unit
prices paid by recent transactions writing the accounts named, or a transaction's writable
accounts. Each test writes fresh accounts, so its sample is its own transactions."""

from __future__ import annotations

import base64

import pytest
from solders.compute_budget import set_compute_unit_price
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import MessageV0
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from ledger_project.base58 import b58encode
from localnet.methods_fees import percentile
from localnet.testing import rpc_call
from transactions.tests.chainkit import funded, send

pytestmark = pytest.mark.chain

#: Paid by the four transactions of ``market``; the levels of this sample, interpolated
#: linearly (positions 0, 0.75, 1.5, 2.25, 2.85, 3 of the sorted prices).
PRICES = (1_000, 2_000, 4_000, 8_001)
LEVELS = {"min": 1_000.0, "low": 1_750.0, "medium": 3_000.0, "high": 5_000.25, "veryHigh": 7_400.85, "unsafeMax": 8_001.0}


@pytest.fixture
def market(chain):
    """A fresh payer and a fresh account written by four transactions at PRICES."""
    payer, target = funded(chain), Keypair().pubkey()
    for index, price in enumerate(PRICES):
        send(chain, payer, [set_compute_unit_price(price), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1_000_000 + index))])
    return payer, target


def estimate(url: str, request: dict) -> dict:
    return rpc_call(url, "getPriorityFeeEstimate", [request])


def test_percentiles_are_interpolated_between_the_nearest_prices():
    assert [percentile(list(PRICES), p) for p in (0, 25, 50, 75, 95, 100)] == [pytest.approx(v) for v in LEVELS.values()]
    assert percentile([], 50) == 0 and percentile([7], 95) == 7


def test_account_keys_answer_the_level_asked_for(localnet_url, market):
    _, target = market
    keys = [str(target)]
    assert estimate(localnet_url, {"accountKeys": keys})["result"] == {"priorityFeeEstimate": LEVELS["medium"]}  # no level: Medium
    for level, key in (("Min", "min"), ("Low", "low"), ("Medium", "medium"), ("High", "high"), ("VeryHigh", "veryHigh"), ("UnsafeMax", "unsafeMax")):
        assert estimate(localnet_url, {"accountKeys": keys, "options": {"priorityLevel": level}})["result"] == {"priorityFeeEstimate": LEVELS[key]}
    # recommended: the median.
    assert estimate(localnet_url, {"accountKeys": keys, "options": {"recommended": True}})["result"] == {"priorityFeeEstimate": 3_000.0}


def test_include_all_priority_fee_levels_answers_every_level(localnet_url, market):
    _, target = market
    alone = estimate(localnet_url, {"accountKeys": [str(target)], "options": {"includeAllPriorityFeeLevels": True}})["result"]
    assert alone == {"priorityFeeLevels": LEVELS}
    both = estimate(localnet_url, {"accountKeys": [str(target)], "options": {"includeAllPriorityFeeLevels": True, "priorityLevel": "High"}})["result"]
    assert both == {"priorityFeeEstimate": LEVELS["high"], "priorityFeeLevels": LEVELS}


def test_a_transaction_is_estimated_for_its_writable_accounts(localnet_url, market):
    payer, target = market
    message = MessageV0.try_compile(payer.pubkey(), [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1))], [], Hash.default())
    raw = bytes(VersionedTransaction.populate(message, [Signature.default()]))
    by_keys = estimate(localnet_url, {"accountKeys": [str(payer.pubkey()), str(target)], "options": {"includeAllPriorityFeeLevels": True}})["result"]
    assert by_keys == {"priorityFeeLevels": LEVELS}
    # Base58 is the default encoding; Base64 as the provider spells it, or lower-case.
    assert estimate(localnet_url, {"transaction": b58encode(raw), "options": {"includeAllPriorityFeeLevels": True}})["result"] == by_keys
    for encoding in ("Base64", "base64"):
        answer = estimate(localnet_url, {"transaction": base64.b64encode(raw).decode(), "options": {"transactionEncoding": encoding, "recommended": True}})
        assert answer["result"] == {"priorityFeeEstimate": 3_000.0}


def test_accounts_nobody_paid_for_are_zero_and_empty_slots_count_as_zero_when_asked(localnet_url, market):
    untouched = str(Keypair().pubkey())
    assert estimate(localnet_url, {"accountKeys": [untouched], "options": {"includeAllPriorityFeeLevels": True}})["result"] == {
        "priorityFeeLevels": dict.fromkeys(LEVELS, 0.0)}
    # Four priced slots at most in a window of 50: the zeros of the others are most of it.
    _, target = market
    levels = estimate(localnet_url, {"accountKeys": [str(target)], "options": {"includeAllPriorityFeeLevels": True, "evaluateEmptySlotAsZero": True}})["result"]["priorityFeeLevels"]
    assert levels["min"] == levels["medium"] == 0.0 and levels["unsafeMax"] == 8_001.0


def test_bad_requests_are_invalid_params(localnet_url, market):
    _, target = market
    keys = [str(target)]
    for request in (
        {},  # neither transaction nor accountKeys
        {"accountKeys": keys, "transaction": "abc"},  # both
        {"accountKeys": ["not-an-address"]},
        {"accountKeys": keys, "options": {"priorityLevel": "MEDIUM"}},
        {"accountKeys": keys, "options": {"lookbackSlots": 0}},
        {"accountKeys": keys, "options": {"lookbackSlots": 151}},
        {"accountKeys": keys, "options": {"recommended": "yes"}},
        {"accountKeys": keys, "options": {"priority": "High"}},
        {"transaction": "AAAA", "options": {"transactionEncoding": "base64"}},
        {"transaction": "AAAA", "options": {"transactionEncoding": "hex"}},
    ):
        assert estimate(localnet_url, request)["error"]["code"] == -32602, request
