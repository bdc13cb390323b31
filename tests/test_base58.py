"""ledger_project.base58: the base58 library, held strict (no whitespace, nothing outside the
alphabet) — what addresses and signatures are parsed with."""

from __future__ import annotations

import os

import pytest
from solders.pubkey import Pubkey
from solders.signature import Signature

from ledger_project.base58 import b58decode, b58encode


@pytest.mark.parametrize("length", [0, 1, 31, 32, 64])
def test_round_trip_keeps_leading_zero_bytes(length):
    for zeros in range(3):
        data = b"\0" * zeros + os.urandom(length)
        assert b58decode(b58encode(data)) == data


def test_it_spells_keys_and_signatures_as_solders_does():
    key, signature = Pubkey.new_unique(), Signature(os.urandom(64))
    assert b58encode(bytes(key)) == str(key) and b58decode(str(signature)) == bytes(signature)


@pytest.mark.parametrize("text", ["abc ", " abc", "ab\tc", "abc\n", "0OIl", "é1"])
def test_anything_outside_the_alphabet_is_refused(text):
    with pytest.raises(ValueError):
        b58decode(text)
