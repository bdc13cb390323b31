"""The TransferChecked a movement builds for a transfer-hook mint carries the hook's extra
accounts after its own (positions/movement.py), read from the validation account."""

from __future__ import annotations

import hashlib
import struct
from types import SimpleNamespace

from solders.instruction import AccountMeta
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID
from instruments.token2022.transfer_hook import validation_address
from positions import movement
from transactions.services import SignerSpec

EXECUTE = hashlib.sha256(b"spl-transfer-hook-interface:execute").digest()[:8]


def test_transfer_checked_of_a_hooked_mint_appends_extra_accounts_program_and_validation(monkeypatch):
    program, mint, fixed = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    source, destination, authority = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    validation = validation_address(mint, program)
    meta = bytes([0]) + bytes(fixed) + bytes([0, 1])  # a fixed, writable account
    value = struct.pack("<I", 1) + meta
    accounts = {validation: EXECUTE + struct.pack("<I", len(value)) + value}
    monkeypatch.setattr(movement, "_fetch", lambda cluster: accounts.get)
    instrument = SimpleNamespace(address=str(mint), version="TOKEN_2022", decimals=6, extensions=["TRANSFER_HOOK"], transfer_hook_program_address=str(program))
    leg = movement.Leg(movement.TRANSFER, instrument, 1234, SignerSpec(authority),
                       source=movement.Party(str(source), ""), destination=movement.Party(str(destination), ""))
    instruction = movement._movement_instruction(leg, "CHAIN_LOCALNET")
    assert instruction.program_id == TOKEN_2022_PROGRAM_ID
    assert bytes(instruction.data) == bytes([12]) + struct.pack("<Q", 1234) + bytes([6])  # TransferChecked
    assert list(instruction.accounts) == [
        AccountMeta(source, False, True), AccountMeta(mint, False, False), AccountMeta(destination, False, True), AccountMeta(authority, True, False),
        AccountMeta(fixed, False, True), AccountMeta(program, False, False), AccountMeta(validation, False, False),
    ]


def test_transfer_checked_without_a_hook_program_is_plain(monkeypatch):
    monkeypatch.setattr(movement, "_fetch", lambda cluster: (_ for _ in ()).throw(AssertionError("nothing to fetch")))
    mint = Keypair().pubkey()
    instrument = SimpleNamespace(address=str(mint), version="TOKEN_2022", decimals=0, extensions=["TRANSFER_HOOK"], transfer_hook_program_address="")
    leg = movement.Leg(movement.TRANSFER, instrument, 1, SignerSpec(Pubkey.default()),
                       source=movement.Party(str(Keypair().pubkey()), ""), destination=movement.Party(str(Keypair().pubkey()), ""))
    assert len(movement._movement_instruction(leg, "CHAIN_LOCALNET").accounts) == 4
