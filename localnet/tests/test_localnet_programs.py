"""The local node's programs (localnet/programs.py): the project's programs at
their fixed ids from genesis, and programs deployed with ordinary BPFLoaderUpgradeable
transactions, both runnable after a restart and after kill -9. Checked with an unmodified
solana-py client on a node of the test's own."""

from __future__ import annotations

import struct

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solana.rpc.core import RPCException
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError

import programs
from chain import loader
from localnet.testing import LocalnetProcess
from transactions.tests.chainkit import funded, next_slot, wait

pytestmark = pytest.mark.chain

#: InvalidInstruction of each program: what a one-byte instruction it does not know fails with.
INVALID = {"allowlist_hook": 7001, "loan_vault": 7101, "price_feed": 7301, "lending": 7501}


@pytest.fixture
def node(tmp_path):
    process = LocalnetProcess(tmp_path / "data").start()
    yield process
    process.stop()


def _client(node) -> Client:
    return Client(node.url, timeout=10, commitment=Confirmed)


def custom_error_of(client: Client, payer: Keypair, program: Pubkey) -> int:
    """Call ``program`` with one byte of data no instruction has: the Custom(code) the
    program answers (so it is loaded and runs at that id), from the preflight refusal."""
    tx = Transaction([payer], Message([Instruction(program, b"\xfe", [])], payer.pubkey()), client.get_latest_blockhash().value.blockhash)
    with pytest.raises(RPCException) as refused:
        client.send_transaction(tx)
    detail = refused.value.args[0].data
    assert any(line.startswith(f"Program {program} failed: custom program error") for line in detail.logs), detail.logs
    assert isinstance(detail.err, TransactionErrorInstructionError) and isinstance(detail.err.err, InstructionErrorCustom), detail.err
    return detail.err.err.code


def deploy(client: Client, payer: Keypair, elf: bytes, *, authority: Keypair, program: Keypair | None = None, upgrade: bool = False) -> Pubkey:
    """Deploy (or upgrade) ``elf`` with the loader's own instructions (chain/loader.py)."""
    buffer = Keypair()
    rent = lambda size: client.get_minimum_balance_for_rent_exemption(size).value  # noqa: E731
    common = dict(payer=payer.pubkey(), program=program.pubkey(), buffer=buffer.pubkey(), authority=authority.pubkey(), program_bytes=elf, buffer_rent=rent(loader.buffer_size(len(elf))))
    plan = loader.upgrade_plan(**common) if upgrade else loader.deploy_plan(**common, program_rent=rent(loader.PROGRAM_ACCOUNT_SIZE))
    keys = {k.pubkey(): k for k in (payer, buffer, authority, program)}
    for step in plan:
        signers = list({payer.pubkey(): payer, **{s: keys[s] for s in step.signers}}.values())
        tx = Transaction(signers, Message(step.instructions, payer.pubkey()), client.get_latest_blockhash().value.blockhash)
        status = wait(client, client.send_transaction(tx).value)
        assert status.err is None, status
    return program.pubkey()


def test_genesis_loads_the_projects_programs_at_their_fixed_ids(node):
    client = _client(node)
    payer = funded(client)
    for name, address in programs.LOCALNET_PROGRAM_IDS.items():
        program = Pubkey.from_string(address)
        account = client.get_account_info(program).value
        assert account.executable and account.owner == loader.LOADER
        programdata = loader.programdata_address(program)
        assert bytes(account.data) == struct.pack("<I", 2) + bytes(programdata)
        data = bytes(client.get_account_info(programdata).value.data)
        assert data[:13] == struct.pack("<IQ", 3, 0) + b"\x00"  # deployed at slot 0, no upgrade authority
        assert data[loader.PROGRAMDATA_METADATA_SIZE:] == programs.program_bytes(name)
        assert custom_error_of(client, payer, program) == INVALID[name]


def test_deployed_and_genesis_programs_run_after_a_restart_and_after_kill_9(node):
    client = _client(node)
    payer = funded(client, 100 * 10**9)
    authority, program = Keypair(), Keypair()
    deployed = deploy(client, payer, programs.program_bytes("loan_vault"), authority=authority, program=program)
    next_slot(client)  # a program runs from the slot after its deployment
    assert custom_error_of(client, payer, deployed) == 7101

    node.restart()
    assert client.get_account_info(deployed).value.executable
    assert custom_error_of(client, payer, deployed) == 7101
    programdata = bytes(client.get_account_info(loader.programdata_address(deployed)).value.data)
    assert programdata[13:45] == bytes(authority.pubkey())  # the upgrade authority is kept

    # An upgrade after the restart (the hook's code at the vault's id), then a crash.
    deploy(client, payer, programs.program_bytes("allowlist_hook"), authority=authority, program=program, upgrade=True)
    next_slot(client)
    assert custom_error_of(client, payer, deployed) == 7001
    node.kill()
    node.start()
    assert custom_error_of(client, payer, deployed) == 7001
    for name, address in programs.LOCALNET_PROGRAM_IDS.items():
        assert custom_error_of(client, payer, Pubkey.from_string(address)) == INVALID[name]


def test_bpf_program_flag_loads_an_elf_at_an_address_of_its_own_at_genesis(tmp_path):
    """``--bpf-program ADDRESS SO_FILE`` (solana-test-validator's flag, how outside suites
    such as @solana/spl-token's e2e load the programs they call) loads the ELF at that
    address as a genesis program (no upgrade authority); it runs, and the data directory
    keeps it (a restart without the flag still runs it)."""
    address = Keypair().pubkey()
    elf = tmp_path / "price_feed.so"
    elf.write_bytes(programs.program_bytes("price_feed"))
    node = LocalnetProcess(tmp_path / "data", extra_args=("--bpf-program", str(address), str(elf))).start()
    try:
        client = _client(node)
        payer = funded(client)
        account = client.get_account_info(address).value
        assert account.executable and account.owner == loader.LOADER
        programdata = loader.programdata_address(address)
        assert bytes(account.data) == struct.pack("<I", 2) + bytes(programdata)
        data = bytes(client.get_account_info(programdata).value.data)
        assert data[:13] == struct.pack("<IQ", 3, 0) + b"\x00" and data[45:] == elf.read_bytes()
        assert custom_error_of(client, payer, address) == INVALID["price_feed"]
        node.extra_args = ()
        node.restart()
        assert custom_error_of(client, payer, address) == INVALID["price_feed"]
    finally:
        node.stop()
