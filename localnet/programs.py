"""Programs on the embedded node (issue 15; docs/localnet.md, "Programs").

At genesis the node loads every program of ``programs/`` (the committed ``.so`` files) at
its fixed id (``programs.LOCALNET_PROGRAM_IDS``, which are also CHAIN_LOCALNET's entries of
``settings.LEDGER_PROGRAM_IDS``), as BPFLoaderUpgradeable accounts exactly as a deployment
leaves them:

- the program account (owner the loader, executable): ``Program {programdata}``, 36 bytes;
- the program data account, PDA ``[program]`` of the loader: ``ProgramData {slot: 0,
  upgrade_authority: None}`` (45 bytes) then the ELF. No upgrade authority: nobody can
  upgrade or close a genesis program (a new build runs on a node started from a fresh data
  directory, or at ids of its own through ``deploy_programs``).

They are written to the store like the faucet at genesis, so they survive restarts as any
other account. A data directory from before programs were loaded gets the missing ones at
its next boot (the same accounts; nothing else changes).

Ordinary BPFLoaderUpgradeable deployments sent as transactions are kept too: the node
stores executable accounts like all others. LiteSVM loads a program into its cache when
its executable account is set, and refuses it while the program data account is missing,
so executable accounts are set after every other account (``boot_order``) — at boot, and
when a transaction's writes are mirrored into the second runtime.
"""

from __future__ import annotations

import struct
from typing import Iterable

from solders.account import Account
from solders.pubkey import Pubkey

import programs

from .store import StoredAccount

LOADER = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
PROGRAM_STATE, PROGRAMDATA_STATE = 2, 3  # UpgradeableLoaderState variants
PROGRAMDATA_METADATA_SIZE = 45  # variant u32, slot u64, Option<Pubkey>


def programdata_address(program: Pubkey) -> Pubkey:
    return Pubkey.find_program_address([bytes(program)], LOADER)[0]


def genesis_accounts(program: Pubkey, elf: bytes, minimum_balance) -> list[StoredAccount]:
    """The program data account, then the program account, of ``elf`` loaded at
    ``program`` with no upgrade authority; ``minimum_balance(size)`` is the runtime's
    rent-exempt minimum."""
    programdata = programdata_address(program)
    data = struct.pack("<IQ", PROGRAMDATA_STATE, 0) + b"\x00" + bytes(32) + elf
    head = struct.pack("<I", PROGRAM_STATE) + bytes(programdata)
    return [
        StoredAccount(str(programdata), minimum_balance(len(data)), str(LOADER), False, 0, data),
        StoredAccount(str(program), minimum_balance(len(head)), str(LOADER), True, 0, head),
    ]


def boot_order(accounts: Iterable[StoredAccount]) -> list[StoredAccount]:
    """Executable accounts after every other (their program data must be set first)."""
    return sorted(accounts, key=lambda acc: acc.executable)


def executable_last(keys, after: dict) -> list:
    """``keys`` with those whose account (``after[key]``) is executable last."""
    return sorted(keys, key=lambda key: after[key] is not None and after[key].executable)


def load_missing(node, extra: Iterable[tuple[Pubkey, bytes]] = ()) -> list[str]:
    """Load every project program the node does not have at its fixed id into its runtimes
    and its store (genesis, or an older data directory), then each of ``extra`` (address,
    ELF: ``--bpf-program``, solana-test-validator's flag) at its address unless an account
    is there already; the names (addresses) loaded."""
    wanted = [(name, Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS[name]), None) for name in programs.NAMES]
    wanted += [(str(program), program, elf) for program, elf in extra]
    loaded = []
    for name, program, elf in wanted:
        if node.svm.get_account(program) is not None:
            continue
        accounts = genesis_accounts(program, programs.program_bytes(name) if elf is None else elf, node.svm.minimum_balance_for_rent_exemption)
        for acc in accounts:
            for runtime in node.runtimes:
                runtime.set_account(Pubkey.from_string(acc.pubkey), Account(acc.lamports, acc.data, Pubkey.from_string(acc.owner), acc.executable, acc.rent_epoch))
        node.store.commit_transaction(accounts=accounts, deleted=[], tx=None, addresses=[])
        loaded.append(name)
    return loaded
