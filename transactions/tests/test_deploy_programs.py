"""python manage.py deploy_programs on a cluster of its own (a second local node, whose
genesis programs sit at the fixed CHAIN_LOCALNET ids, so the command deploys at new ids
as on any other cluster): first deployment, no-op re-run, upgrades, resuming a run cut
short, the fee payer's funds; checked with an unmodified solana-py client."""

from __future__ import annotations

import hashlib
import shutil
import struct

import pytest
from django.core.management import CommandError, call_command
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solders.keypair import Keypair
from solders.pubkey import Pubkey

import programs
from transactions import fee_payers
from chain import loader
from localnet.testing import LocalnetProcess
from transactions.models import ProgramDeployment, ProgramDeploymentState
from transactions.programs import program_id
from transactions.tests.chainkit import funded, next_slot, wait

from localnet.tests.test_localnet_programs import INVALID, custom_error_of

pytestmark = pytest.mark.chain

SECOND = "CHAIN_SECOND"


@pytest.fixture
def second(tmp_path, settings):
    node = LocalnetProcess(tmp_path / "second").start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, SECOND: node.url}
    yield Client(node.url, timeout=10, commitment=Confirmed)
    node.stop()


def _deploy(*args) -> list[str]:
    from io import StringIO

    out = StringIO()
    call_command("deploy_programs", "--cluster", SECOND, *args, stdout=out)
    return out.getvalue().splitlines()


def _programdata(client: Client, program: Pubkey) -> bytes:
    return bytes(client.get_account_info(loader.programdata_address(program)).value.data)


@pytest.mark.django_db
def test_deploys_once_then_does_nothing_then_upgrades_when_the_bytes_differ(second, tmp_path):
    client = second
    payer = fee_payers.platform_fee_payer(SECOND).pubkey
    # Not funded yet (no airdrops on clusters other than CHAIN_LOCALNET): refused, naming the payer.
    with pytest.raises(CommandError, match=f"platform fee payer {payer} holds 0 lamports"):
        _deploy()
    # The program's id was recorded before anything was sent: the next run resumes there.
    pending = ProgramDeployment.objects.get(cluster=SECOND, name="allowlist_hook")
    assert pending.state == ProgramDeploymentState.DEPLOYING and program_id(SECOND, "allowlist_hook") is None
    wait(client, client.request_airdrop(payer, 50 * 10**9).value)

    lines = _deploy()
    assert [line.split(":")[0] for line in lines] == list(programs.NAMES) and all(": deployed at " in line for line in lines)
    rows = {row.name: row for row in ProgramDeployment.objects.filter(cluster=SECOND)}
    assert rows["allowlist_hook"].program_id == pending.program_id
    caller = funded(client)
    authority = rows["loan_vault"].upgrade_authority_key.public_key
    for name, row in rows.items():
        program = Pubkey.from_string(row.program_id)
        assert row.state == ProgramDeploymentState.DEPLOYED and program_id(SECOND, name) == program
        assert program != Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS[name])
        account = client.get_account_info(program).value
        assert account.executable and account.owner == loader.LOADER
        assert bytes(account.data) == struct.pack("<I", 2) + bytes(loader.programdata_address(program))
        data = _programdata(client, program)
        elf = programs.program_bytes(name)
        assert data[12] == 1 and data[13:45] == bytes(Pubkey.from_string(authority))  # upgrade authority: the service's key
        assert data[45:45 + len(elf)] == elf and not any(data[45 + len(elf):]) and len(data) == 45 + 2 * len(elf)
        assert row.upgrade_authority_key.public_key == authority and row.sha256 == hashlib.sha256(programs.program_bytes(name)).hexdigest()
        assert custom_error_of(client, caller, program) == INVALID[name]

    # Again: the bytes are equal, nothing is sent.
    balance = client.get_balance(payer).value
    assert all(": unchanged at " in line and "0 transactions" in line for line in _deploy())
    assert client.get_balance(payer).value == balance

    # A build whose loan_vault differs (here: the hook's code under its name): an upgrade in place.
    build = tmp_path / "build"
    build.mkdir()
    shutil.copy(programs.ROOT / "allowlist_hook" / "allowlist_hook.so", build / "loan_vault.so")
    vault = Pubkey.from_string(rows["loan_vault"].program_id)
    [line] = _deploy("--program", "loan_vault", "--build-dir", str(build))
    assert line.startswith(f"loan_vault: upgraded at {vault}")
    hook_elf = programs.program_bytes("allowlist_hook")
    data = _programdata(client, vault)
    assert data[45:45 + len(hook_elf)] == hook_elf and not any(data[45 + len(hook_elf):])
    next_slot(client)
    assert custom_error_of(client, caller, vault) == 7001
    # And back to the committed build.
    [line] = _deploy("--program", "loan_vault")
    assert line.startswith(f"loan_vault: upgraded at {vault}")
    next_slot(client)
    assert custom_error_of(client, caller, vault) == 7101
    assert ProgramDeployment.objects.get(cluster=SECOND, name="loan_vault").sha256 == hashlib.sha256(programs.program_bytes("loan_vault")).hexdigest()
    # The payer got every buffer's rent back: it paid fees and the two programs' accounts only.
    spent = 50 * 10**9 - client.get_balance(payer).value
    accounts_rent = sum(client.get_balance(k).value for row in rows.values() for k in (Pubkey.from_string(row.program_id), loader.programdata_address(Pubkey.from_string(row.program_id))))
    assert accounts_rent <= spent < accounts_rent + 10**7


@pytest.mark.django_db
def test_genesis_programs_are_final_and_an_unknown_configured_id_is_refused(second, settings, tmp_path):
    # The second node's genesis programs, named as this cluster's: equal bytes are a no-op.
    settings.LEDGER_PROGRAM_IDS = {**settings.LEDGER_PROGRAM_IDS, SECOND: dict(programs.LOCALNET_PROGRAM_IDS)}
    assert all(": unchanged at " in line for line in _deploy())
    assert not ProgramDeployment.objects.filter(cluster=SECOND).exists()
    build = tmp_path / "build"
    build.mkdir()
    shutil.copy(programs.ROOT / "allowlist_hook" / "allowlist_hook.so", build / "loan_vault.so")
    with pytest.raises(CommandError, match="no upgrade authority"):
        _deploy("--program", "loan_vault", "--build-dir", str(build))
    # An id configured for a cluster where nothing is deployed, whose key the service does not hold.
    settings.LEDGER_PROGRAM_IDS = {**settings.LEDGER_PROGRAM_IDS, SECOND: {"loan_vault": str(Keypair().pubkey())}}
    with pytest.raises(CommandError, match="no program is there"):
        _deploy("--program", "loan_vault")

