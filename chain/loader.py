"""BPFLoaderUpgradeable instructions: how the service deploys and upgrades its own programs
on a cluster with ordinary transactions (docs/programs.md, "Deploying").

Pure builders, no RPC: rent amounts and blockhashes come from the caller. The loader's
instructions are bincode: a u32 little-endian variant index, then the fields
(``Write``: offset u32, bytes as u64 length + bytes; ``DeployWithMaxDataLen``: u64).

A deployment is a sequence of transactions (``deploy_plan``):

1. System CreateAccount of the buffer (37 bytes of metadata + the program) and
   ``InitializeBuffer`` naming the buffer authority, in one transaction (otherwise anyone
   could initialize the buffer first);
2. ``Write`` chunks of the program into the buffer, each sized to fit one transaction;
3. System CreateAccount of the program account (36 bytes) and ``DeployWithMaxDataLen``,
   which moves the buffer into the program data account (PDA ``[program]`` of the loader)
   and makes the program executable, with the upgrade authority's signature.

An upgrade writes a new buffer the same way, then ``Upgrade`` (``upgrade_plan``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account

from .builder import MAX_TRANSACTION_SIZE

LOADER = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
SYSVAR_RENT = Pubkey.from_string("SysvarRent111111111111111111111111111111111")
SYSVAR_CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")

#: UpgradeableLoaderState sizes: Buffer {authority: Option<Pubkey>} = 4 + 1 + 32,
#: Program {programdata: Pubkey} = 4 + 32, ProgramData {slot, authority} = 4 + 8 + 1 + 32.
BUFFER_METADATA_SIZE = 37
PROGRAM_ACCOUNT_SIZE = 36
PROGRAMDATA_METADATA_SIZE = 45

INITIALIZE_BUFFER, WRITE, DEPLOY_WITH_MAX_DATA_LEN, UPGRADE, SET_AUTHORITY, CLOSE, EXTEND_PROGRAM, SET_AUTHORITY_CHECKED = range(8)


def _tag(variant: int) -> bytes:
    return struct.pack("<I", variant)


def _w(key: Pubkey, signer: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=True)


def _ro(key: Pubkey, signer: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=False)


def programdata_address(program: Pubkey) -> Pubkey:
    return Pubkey.find_program_address([bytes(program)], LOADER)[0]


def buffer_size(program_len: int) -> int:
    return BUFFER_METADATA_SIZE + program_len


def programdata_size(max_data_len: int) -> int:
    return PROGRAMDATA_METADATA_SIZE + max_data_len


def initialize_buffer(*, buffer: Pubkey, authority: Pubkey) -> Instruction:
    return Instruction(LOADER, _tag(INITIALIZE_BUFFER), [_w(buffer), _ro(authority)])


def write(*, buffer: Pubkey, authority: Pubkey, offset: int, data: bytes) -> Instruction:
    payload = _tag(WRITE) + struct.pack("<IQ", offset, len(data)) + bytes(data)
    return Instruction(LOADER, payload, [_w(buffer), _ro(authority, signer=True)])


def deploy_with_max_data_len(*, payer: Pubkey, program: Pubkey, buffer: Pubkey, authority: Pubkey, max_data_len: int) -> Instruction:
    accounts = [
        _w(payer, signer=True), _w(programdata_address(program)), _w(program), _w(buffer),
        _ro(SYSVAR_RENT), _ro(SYSVAR_CLOCK), _ro(SYSTEM_PROGRAM), _ro(authority, signer=True),
    ]
    return Instruction(LOADER, _tag(DEPLOY_WITH_MAX_DATA_LEN) + struct.pack("<Q", max_data_len), accounts)


def upgrade(*, program: Pubkey, buffer: Pubkey, authority: Pubkey, spill: Pubkey) -> Instruction:
    """Replaces the program's code with the buffer's; the buffer's lamports go to ``spill``."""
    accounts = [
        _w(programdata_address(program)), _w(program), _w(buffer), _w(spill),
        _ro(SYSVAR_RENT), _ro(SYSVAR_CLOCK), _ro(authority, signer=True),
    ]
    return Instruction(LOADER, _tag(UPGRADE), accounts)


def extend_program(*, program: Pubkey, payer: Pubkey, additional_bytes: int) -> Instruction:
    """Grows the program data account (an upgrade larger than max_data_len needs it)."""
    accounts = [_w(programdata_address(program)), _w(program), _ro(SYSTEM_PROGRAM), _w(payer, signer=True)]
    return Instruction(LOADER, _tag(EXTEND_PROGRAM) + struct.pack("<I", additional_bytes), accounts)


def close(*, account: Pubkey, recipient: Pubkey, authority: Pubkey, program: Pubkey | None = None) -> Instruction:
    """Closes a buffer (or, with ``program``, a program's data account); lamports to ``recipient``."""
    accounts = [_w(account), _w(recipient), _ro(authority, signer=True)]
    if program is not None:
        accounts.append(_w(program))
    return Instruction(LOADER, _tag(CLOSE), accounts)


def write_chunk_size(*, payer: Pubkey, buffer: Pubkey, authority: Pubkey) -> int:
    """The most program bytes one ``Write`` transaction carries within the packet limit."""
    probe = write(buffer=buffer, authority=authority, offset=0, data=b"")
    message = Message.new_with_blockhash([probe], payer, Hash.default())
    signers = message.header.num_required_signatures
    size = 1 + 64 * signers + len(bytes(message))
    # The instruction data length is a compact-u16: one byte more once it passes 127.
    return MAX_TRANSACTION_SIZE - size - 1


@dataclass(frozen=True)
class Step:
    """One transaction of a plan: its instructions and who must sign (besides the payer)."""

    instructions: list[Instruction]
    signers: tuple[Pubkey, ...]


def write_steps(*, payer: Pubkey, buffer: Pubkey, authority: Pubkey, program_bytes: bytes) -> list[Step]:
    size = write_chunk_size(payer=payer, buffer=buffer, authority=authority)
    return [
        Step([write(buffer=buffer, authority=authority, offset=at, data=program_bytes[at:at + size])], (authority,))
        for at in range(0, len(program_bytes), size)
    ]


def buffer_steps(*, payer: Pubkey, buffer: Pubkey, authority: Pubkey, program_bytes: bytes, buffer_rent: int) -> list[Step]:
    """Create and fill a buffer: ``buffer_rent`` is the rent-exempt minimum of
    ``buffer_size(len(program_bytes))`` bytes."""
    create = create_account(CreateAccountParams(from_pubkey=payer, to_pubkey=buffer, lamports=buffer_rent, space=buffer_size(len(program_bytes)), owner=LOADER))
    first = Step([create, initialize_buffer(buffer=buffer, authority=authority)], (buffer,))
    return [first, *write_steps(payer=payer, buffer=buffer, authority=authority, program_bytes=program_bytes)]


def deploy_plan(*, payer: Pubkey, program: Pubkey, buffer: Pubkey, authority: Pubkey, program_bytes: bytes, buffer_rent: int, program_rent: int, max_data_len: int | None = None) -> list[Step]:
    """Every transaction of a first deployment, in order. ``program`` and ``buffer`` are new
    keypairs' addresses (they sign their creation); ``authority`` becomes the upgrade
    authority. ``max_data_len`` defaults to twice the program, room for upgrades; the
    payer funds the program data account's rent at deployment."""
    max_data_len = max_data_len or 2 * len(program_bytes)
    if max_data_len < len(program_bytes):
        raise ValueError("max_data_len is smaller than the program")
    create_program = create_account(CreateAccountParams(from_pubkey=payer, to_pubkey=program, lamports=program_rent, space=PROGRAM_ACCOUNT_SIZE, owner=LOADER))
    deploy = deploy_with_max_data_len(payer=payer, program=program, buffer=buffer, authority=authority, max_data_len=max_data_len)
    last = Step([create_program, deploy], (program, authority))
    return [*buffer_steps(payer=payer, buffer=buffer, authority=authority, program_bytes=program_bytes, buffer_rent=buffer_rent), last]


def upgrade_plan(*, payer: Pubkey, program: Pubkey, buffer: Pubkey, authority: Pubkey, program_bytes: bytes, buffer_rent: int) -> list[Step]:
    """Every transaction of an upgrade: a new buffer, then ``Upgrade`` (the buffer's rent
    comes back to the payer)."""
    last = Step([upgrade(program=program, buffer=buffer, authority=authority, spill=payer)], (authority,))
    return [*buffer_steps(payer=payer, buffer=buffer, authority=authority, program_bytes=program_bytes, buffer_rent=buffer_rent), last]
