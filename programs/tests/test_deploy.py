"""Deploying the project's programs with ordinary BPFLoaderUpgradeable transactions
(chain/loader.py), as deploy_programs does on real clusters: in LiteSVM, a
buffer is written in transaction-sized chunks, deployed, run, then upgraded."""

from __future__ import annotations

import struct

from solders.keypair import Keypair
from solders.message import Message
from solders.transaction import Transaction

from instruments.token2022.constants import TOKEN_PROGRAM_ID
from programs.tests.svmkit import Chain, program_bytes
from programs.tests.vaultkit import VaultWorld
from chain import loader
from chain.builder import MAX_TRANSACTION_SIZE


def run_plan(chain: Chain, plan: list[loader.Step], keypairs: list[Keypair]) -> list[int]:
    """Sends every step; the serialized size of each transaction."""
    by_key = {k.pubkey(): k for k in keypairs}
    sizes = []
    for step in plan:
        signers = [chain.payer, *(by_key[s] for s in step.signers)]
        tx = Transaction(list({s.pubkey(): s for s in signers}.values()), Message(step.instructions, chain.payer.pubkey()), chain.svm.latest_blockhash())
        sizes.append(len(bytes(tx)))
        chain.ok(step.instructions, [by_key[s] for s in step.signers])
    return sizes


def rent(chain: Chain, size: int) -> int:
    return chain.svm.minimum_balance_for_rent_exemption(size)


def test_a_program_deployed_with_loader_transactions_runs_and_upgrades():
    chain = Chain()
    program, buffer, authority = Keypair(), Keypair(), Keypair()
    hook_so = program_bytes("allowlist_hook")
    vault_so = program_bytes("loan_vault")
    plan = loader.deploy_plan(
        payer=chain.payer.pubkey(), program=program.pubkey(), buffer=buffer.pubkey(), authority=authority.pubkey(),
        program_bytes=hook_so, buffer_rent=rent(chain, loader.buffer_size(len(hook_so))),
        program_rent=rent(chain, loader.PROGRAM_ACCOUNT_SIZE), max_data_len=2 * len(vault_so),
    )
    sizes = run_plan(chain, plan, [program, buffer, authority])
    assert len(plan) > 3 and max(sizes) <= MAX_TRANSACTION_SIZE
    assert max(sizes[1:-1]) > MAX_TRANSACTION_SIZE - 64  # the writes fill their transactions

    account = chain.account(program.pubkey())
    assert account.executable and account.owner == loader.LOADER
    programdata = chain.data(loader.programdata_address(program.pubkey()))
    assert programdata[loader.PROGRAMDATA_METADATA_SIZE:loader.PROGRAMDATA_METADATA_SIZE + len(hook_so)] == hook_so
    assert programdata[13:45] == bytes(authority.pubkey())  # the upgrade authority
    assert chain.account(buffer.pubkey()) is None  # the buffer went into the program

    # Upgrade the program to the vault's code, through a new buffer; then the vault runs at that id.
    new_buffer = Keypair()
    upgrade = loader.upgrade_plan(payer=chain.payer.pubkey(), program=program.pubkey(), buffer=new_buffer.pubkey(), authority=authority.pubkey(), program_bytes=vault_so, buffer_rent=rent(chain, loader.buffer_size(len(vault_so))))
    chain.svm.warp_to_slot(chain.svm.get_clock().slot + 1)  # the loader refuses to upgrade a program in the slot it was deployed in
    run_plan(chain, upgrade, [new_buffer, authority])
    w = VaultWorld(TOKEN_PROGRAM_ID, chain=chain, program=program.pubkey())
    w.create()
    assert w.state().admin == w.admin.pubkey()


def test_write_carries_the_offset_and_the_bytes_as_bincode():
    buffer, authority = Keypair().pubkey(), Keypair().pubkey()
    ix = loader.write(buffer=buffer, authority=authority, offset=1000, data=b"\x01\x02\x03")
    assert bytes(ix.data) == struct.pack("<IIQ", 1, 1000, 3) + b"\x01\x02\x03"
    assert [(m.pubkey, m.is_signer, m.is_writable) for m in ix.accounts] == [(buffer, False, True), (authority, True, False)]
    deploy = loader.deploy_with_max_data_len(payer=buffer, program=authority, buffer=buffer, authority=authority, max_data_len=77)
    assert bytes(deploy.data) == struct.pack("<IQ", 2, 77)
