"""Python side of the allow-list transfer hook: addresses, instruction encoders and the
allow-list decoder, all from abi.py (the definition the program's header is generated
from). Pure functions: nothing here talks to a cluster."""

from __future__ import annotations

from dataclasses import dataclass

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from . import abi

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")


def validation_address(program: Pubkey, mint: Pubkey) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_VALIDATION, bytes(mint)], program)


def allow_list_address(program: Pubkey, mint: Pubkey) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_ALLOW_LIST, bytes(mint)], program)


def _instruction(program: Pubkey, name: str, keys: dict[str, Pubkey], **args) -> Instruction:
    spec = abi.ABI.instruction(name)
    metas = [AccountMeta(keys[a.name], is_signer=a.signer, is_writable=a.writable) for a in spec.accounts]
    return Instruction(program, spec.encode(**args), metas)


def initialize_allow_list(*, program: Pubkey, payer: Pubkey, mint: Pubkey, mint_authority: Pubkey, authority: Pubkey, capacity: int) -> Instruction:
    """Creates the mint's validation account and an empty allow-list managed by ``authority``."""
    keys = {
        "payer": payer, "validation": validation_address(program, mint)[0], "allow_list": allow_list_address(program, mint)[0],
        "mint": mint, "mint_authority": mint_authority, "system_program": SYSTEM_PROGRAM,
    }
    return _instruction(program, "InitializeAllowList", keys, capacity=capacity, authority=authority)


def add_owner(*, program: Pubkey, mint: Pubkey, authority: Pubkey, owner: Pubkey) -> Instruction:
    return _instruction(program, "AddOwner", {"allow_list": allow_list_address(program, mint)[0], "authority": authority}, owner=owner)


def remove_owner(*, program: Pubkey, mint: Pubkey, authority: Pubkey, owner: Pubkey) -> Instruction:
    return _instruction(program, "RemoveOwner", {"allow_list": allow_list_address(program, mint)[0], "authority": authority}, owner=owner)


def set_authority(*, program: Pubkey, mint: Pubkey, authority: Pubkey, new_authority: Pubkey) -> Instruction:
    return _instruction(program, "SetAuthority", {"allow_list": allow_list_address(program, mint)[0], "authority": authority}, new_authority=new_authority)


@dataclass(frozen=True)
class AllowList:
    mint: Pubkey
    authority: Pubkey
    validation: Pubkey
    bump: int
    validation_bump: int
    capacity: int
    owners: tuple[Pubkey, ...]


def decode_allow_list(data: bytes) -> AllowList:
    head = abi.ALLOW_LIST.unpack(data)
    if head["kind"] != abi.ALLOW_LIST_KIND or head["version"] != abi.LAYOUT_VERSION:
        raise ValueError("not an allow-list account")
    if len(data) < abi.allow_list_size(head["capacity"]) or head["count"] > head["capacity"]:
        raise ValueError("allow-list data is shorter than its capacity")
    start = abi.ALLOW_LIST.size
    owners = tuple(Pubkey.from_bytes(data[start + i * abi.OWNER_SIZE:start + (i + 1) * abi.OWNER_SIZE]) for i in range(head["count"]))
    return AllowList(
        mint=Pubkey.from_bytes(head["mint"]), authority=Pubkey.from_bytes(head["authority"]),
        validation=Pubkey.from_bytes(head["validation"]), bump=head["bump"],
        validation_bump=head["validation_bump"], capacity=head["capacity"], owners=owners,
    )


def error_name(code: int) -> str | None:
    """The program's name for Custom(code), or None when the code is not the hook's."""
    error = abi.ABI.error_by_code(code)
    return error.name if error else None
