"""The ExtraAccountMetaList decoder and resolver (instruments/token2022/transfer_hook.py),
on validation-account bytes built here from the published layout of the SPL
transfer-hook interface and tlv-account-resolution — independently of the decoder."""

from __future__ import annotations

import hashlib
import struct

import pytest
from solders.instruction import AccountMeta
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from instruments.token2022.transfer_hook import (
    HookAccountsError,
    decode_extra_account_metas,
    resolve_extra_accounts,
    transfer_hook_accounts,
    validation_address,
)

EXECUTE = hashlib.sha256(b"spl-transfer-hook-interface:execute").digest()[:8]
OTHER = hashlib.sha256(b"spl-transfer-hook-interface:something-else").digest()[:8]


def _meta(discriminator: int, config: bytes, *, signer: bool = False, writable: bool = False) -> bytes:
    assert len(config) <= 32
    return bytes([discriminator]) + config + bytes(32 - len(config)) + bytes([signer, writable])


def _literal(raw: bytes) -> bytes:
    return bytes([1, len(raw)]) + raw


def _instruction_data(index: int, length: int) -> bytes:
    return bytes([2, index, length])


def _account_key(index: int) -> bytes:
    return bytes([3, index])


def _account_data(account: int, offset: int, length: int) -> bytes:
    return bytes([4, account, offset, length])


def _entry(kind: bytes, value: bytes) -> bytes:
    return kind + struct.pack("<I", len(value)) + value


def _validation(metas: list[bytes], *, spare: int = 0, before: bytes = b"", count: int | None = None, tail: int = 16) -> bytes:
    value = struct.pack("<I", len(metas) if count is None else count) + b"".join(metas) + bytes(35 * spare)
    return before + _entry(EXECUTE, value) + bytes(tail)


def _token_account(mint: Pubkey, owner: Pubkey, amount: int = 0) -> bytes:
    return bytes(mint) + bytes(owner) + struct.pack("<Q", amount) + bytes(165 - 72)


class Scene:
    """A transfer of ``amount`` from ``source`` to ``destination`` of a hooked mint."""

    def __init__(self):
        self.program = Keypair().pubkey()
        self.mint, self.source, self.destination, self.authority = (Keypair().pubkey() for _ in range(4))
        self.owner = Keypair().pubkey()
        self.amount = 1_000_000
        self.validation = validation_address(self.mint, self.program)
        self.accounts: dict[Pubkey, bytes] = {self.source: _token_account(self.mint, self.owner)}

    def fetch(self, address: Pubkey):
        return self.accounts.get(address)

    def resolve(self, data: bytes):
        self.accounts[self.validation] = data
        return transfer_hook_accounts(program=self.program, mint=self.mint, source=self.source, destination=self.destination, authority=self.authority, amount=self.amount, fetch=self.fetch)


def test_the_validation_account_is_the_hook_programs_pda_of_the_mint():
    program, mint = Keypair().pubkey(), Keypair().pubkey()
    assert validation_address(mint, program) == Pubkey.find_program_address([b"extra-account-metas", bytes(mint)], program)[0]


def test_the_execute_entry_is_found_among_other_entries_and_spare_room():
    fixed = Keypair().pubkey()
    data = _validation([_meta(0, bytes(fixed), signer=True), _meta(1, _account_key(0), writable=True)], spare=3, before=_entry(OTHER, b"\x07" * 10))
    metas = decode_extra_account_metas(data)
    assert [(m.discriminator, m.is_signer, m.is_writable) for m in metas] == [(0, True, False), (1, False, True)]
    assert metas[0].address_config == bytes(fixed)


def test_every_kind_of_extra_account_resolves_in_order():
    s = Scene()
    fixed = Keypair().pubkey()
    amount = struct.pack("<Q", s.amount)
    pda_a = Pubkey.find_program_address([bytes(s.source), bytes(s.destination), bytes(s.validation)], s.program)[0]
    pda_b = Pubkey.find_program_address([amount, bytes(s.destination), bytes(fixed), bytes(pda_a)], s.program)[0]
    counter = Pubkey.find_program_address([b"counter", bytes(s.mint)], s.program)[0]
    by_owner = Pubkey.find_program_address([bytes(s.owner)], s.program)[0]  # the source's owner, read from its data
    external = Pubkey.find_program_address([bytes(s.authority)], fixed)[0]  # a PDA of the program at index 5
    data = _validation([
        _meta(0, bytes(fixed), signer=True),                                                          # 5
        _meta(1, _account_key(0) + _account_key(2) + _account_key(4), writable=True),                 # 6
        _meta(1, _instruction_data(8, 8) + _account_key(2) + _account_key(5) + _account_key(6), writable=True),  # 7
        _meta(1, _literal(b"counter") + _account_key(1)),                                             # 8
        _meta(1, _account_data(0, 32, 32)),                                                           # 9
        _meta(128 + 5, _account_key(3)),                                                              # 10
        _meta(2, bytes([2, 0, 32]), writable=True),                                                   # 11: the owner's address itself
        _meta(0, bytes(s.source), writable=True),                                                     # 12: read-only in Execute
    ])
    resolved = s.resolve(data)
    assert resolved == [
        AccountMeta(fixed, is_signer=False, is_writable=False),  # never a signer
        AccountMeta(pda_a, is_signer=False, is_writable=True),
        AccountMeta(pda_b, is_signer=False, is_writable=True),
        AccountMeta(counter, is_signer=False, is_writable=False),
        AccountMeta(by_owner, is_signer=False, is_writable=False),
        AccountMeta(external, is_signer=False, is_writable=False),
        AccountMeta(s.owner, is_signer=False, is_writable=True),
        AccountMeta(s.source, is_signer=False, is_writable=False),  # de-escalated
        AccountMeta(s.program, is_signer=False, is_writable=False),
        AccountMeta(s.validation, is_signer=False, is_writable=False),
    ]


def test_an_empty_list_adds_only_the_program_and_the_validation_account():
    s = Scene()
    assert s.resolve(_validation([])) == [AccountMeta(s.program, False, False), AccountMeta(s.validation, False, False)]


def test_a_writable_account_stays_writable_when_an_earlier_one_is_writable():
    execute = [AccountMeta(Keypair().pubkey(), False, False) for _ in range(5)]
    target = Keypair().pubkey()
    metas = decode_extra_account_metas(_validation([_meta(0, bytes(target), writable=True), _meta(0, bytes(target), writable=True), _meta(0, bytes(target))]))
    resolved = resolve_extra_accounts(metas, program=Keypair().pubkey(), execute_accounts=execute, instruction_data=b"", fetch=lambda _: None)
    assert [m.is_writable for m in resolved] == [True, True, False]


@pytest.mark.parametrize("data, words", [
    (_entry(OTHER, b"\x01" * 8) + bytes(12), "no extra-account list"),
    (b"", "no extra-account list"),
    (_validation([_meta(0, bytes(32))], count=2), "counts 2 entries but holds 1"),
    (EXECUTE + struct.pack("<I", 4 + 34) + struct.pack("<I", 1) + bytes(34), "whole number"),
    (EXECUTE + struct.pack("<I", 100) + bytes(20), "runs past"),
    (EXECUTE + struct.pack("<I", 2) + bytes(2), "shorter than its count"),
])
def test_malformed_lists_are_refused(data, words):
    with pytest.raises(HookAccountsError, match=words):
        decode_extra_account_metas(data)


@pytest.mark.parametrize("meta, words", [
    (_meta(3, bytes(32)), "Unknown extra-account type 3"),
    (_meta(1, bytes([9, 0])), "Unknown seed type 9"),
    (_meta(1, _account_key(9)), "index 9, which is not resolved"),
    (_meta(1, _account_data(2, 0, 32)), "does not exist"),  # the destination is not on the network yet
    (_meta(1, _account_data(0, 150, 32)), "past the end of the account data"),
    (_meta(1, _instruction_data(8, 16)), "past the end of the instruction data"),
    (_meta(2, bytes([1, 0])), "past the end of the instruction data"),  # 32 bytes from 16 of data
    (_meta(2, bytes([7, 0])), "Unknown address-data type 7"),
    (_meta(1, bytes([1, 40]) + bytes(30)), "runs past its address_config"),
])
def test_unresolvable_accounts_are_refused(meta, words):
    with pytest.raises(HookAccountsError, match=words):
        Scene().resolve(_validation([meta]))


def test_a_missing_validation_account_is_refused():
    s = Scene()
    with pytest.raises(HookAccountsError, match="does not exist"):
        transfer_hook_accounts(program=s.program, mint=s.mint, source=s.source, destination=s.destination, authority=s.authority, amount=1, fetch=lambda _: None)
