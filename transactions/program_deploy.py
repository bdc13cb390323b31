"""``python manage.py deploy_programs --cluster NAME``: the project's programs on any cluster,
deployed or upgraded with ordinary BPFLoaderUpgradeable transactions (chain/loader.py)
sent through the one RPC client (docs/programs.md, "Deploying").

Per program (``programs.NAMES``):

- its id on the cluster (``transactions.programs.program_id``: LEDGER_PROGRAM_IDS, else the
  ProgramDeployment row) holds an executable program whose bytes equal the build: nothing
  to do (re-running is a no-op);
- it holds other bytes: an upgrade (a new buffer, ``Upgrade``; ``ExtendProgram`` first when
  the build outgrew the program data account), signed by the program's upgrade authority,
  which must be a key the service holds;
- no id yet: a first deployment at a new id. The program account's key and the cluster's
  upgrade authority (one managed key per cluster, shared by its programs) are generated
  and the row is committed (DEPLOYING) before anything is sent, so a run cut short resumes
  at the same id; DEPLOYED once ``DeployWithMaxDataLen`` landed (room for twice the
  program, so upgrades rarely need ExtendProgram).

Who pays: the cluster's platform fee payer (a managed key; on CHAIN_LOCALNET topped up by
airdrop) pays the fees, the buffer's rent (given back when the buffer is consumed: by
``Upgrade``, or moved into the program data account by the deployment) and the program
accounts' rent — the operator's own programs, paid from the operator's own account; the
run checks its balance first. A buffer left by a failed step is closed (its rent back to
the payer) before the error is raised.

This is an operator's command, not a request: it acts for no tenant and writes only
platform rows (ProgramDeployment, ManagedKey).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from django.db import transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

import programs

from . import fee_payers, platform_keys
from chain import builder, loader
from chain.rpc import ChainRpc, rpc_for
from .models import ProgramDeployment, ProgramDeploymentState
from .programs import program_id

logger = logging.getLogger("ledger.transactions")


class DeployError(RuntimeError):
    """A program cannot be deployed or upgraded as asked (the message says why and what to do)."""


@dataclass
class DeployResult:
    name: str
    program_id: str
    action: str  # "unchanged", "deployed", "upgraded"
    sha256: str
    size: int
    signatures: list[str] = field(default_factory=list)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class _Onchain:
    """A program as the cluster holds it: its ELF room, upgrade authority and code."""

    programdata: Pubkey
    authority: Pubkey | None
    slot: int
    room: int  # max_data_len: bytes the program data account holds for the ELF
    code: bytes

    def holds(self, elf: bytes) -> bool:
        """Whether the program's code is ``elf`` (the loader zero-fills the rest)."""
        return self.code[:len(elf)] == elf and not any(self.code[len(elf):])


def _onchain(rpc: ChainRpc, program: Pubkey) -> _Onchain | None:
    account = rpc.account(program)
    if account is None:
        return None
    if account.owner != loader.LOADER or not account.executable:
        raise DeployError(f"{program} is not a BPFLoaderUpgradeable program on {rpc.cluster} (owner {account.owner}).")
    programdata = loader.programdata_address(program)
    data = bytes(rpc.account(programdata).data)
    authority = Pubkey.from_bytes(data[13:45]) if data[12] == 1 else None
    return _Onchain(programdata, authority, int.from_bytes(data[4:12], "little"), len(data) - loader.PROGRAMDATA_METADATA_SIZE, data[loader.PROGRAMDATA_METADATA_SIZE:])


class _Sender:
    """Sends a plan's transactions, signed by the platform fee payer and the step's signers,
    and waits for each to land (writes of one buffer go out together)."""

    def __init__(self, rpc: ChainRpc, payer, keys: dict[Pubkey, object]):
        from .services import SignerSpec

        self.rpc, self.payer = rpc, payer
        # Platform keys (the upgrade authority, the program's and buffers' keys) in the
        # program operations made for them: granted every instruction of these messages.
        self.signers = {
            pubkey: SignerSpec(pubkey, keypair=key, platform=True) if isinstance(key, Keypair) else SignerSpec(pubkey, key, platform=True)
            for pubkey, key in keys.items()
        }
        self.signers[payer.pubkey] = payer
        self.signatures: list[str] = []

    def _raw(self, step: loader.Step) -> bytes:
        built = builder.build(builder.BuildPlan(instructions=step.instructions, fee_payer=self.payer.pubkey, version="LEGACY"), self.rpc)
        specs = [self.signers[k] for k in built.signers]
        signatures = platform_keys.engine_sign(built.to_bytes(), built.message, specs, grants=platform_keys.AUTHORED_BY_PLATFORM)
        return bytes(builder.assemble(built.message, signatures))

    def send(self, steps: list[loader.Step]) -> None:
        sent = []
        for answer in self.rpc.send_raw_many([self._raw(step) for step in steps]):
            if isinstance(answer, Exception):
                raise answer
            sent.append(answer)
        for signature in sent:
            self._wait(signature)
        self.signatures += [str(s) for s in sent]

    def _wait(self, signature: Signature, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.rpc.signature_statuses([signature])[0]
            if status is not None and status.confirmation_status is not None:
                if status.err is not None:
                    raise DeployError(f"transaction {signature} failed on {self.rpc.cluster}: {status.err}")
                return
            time.sleep(0.1)
        raise DeployError(f"transaction {signature} did not land on {self.rpc.cluster} within {timeout:.0f} s; run the command again")


def _run_plan(sender: _Sender, plan: list[loader.Step], buffer: Keypair, authority: Pubkey) -> None:
    """The buffer's creation, its writes together, then the last step; a failure after the
    buffer exists closes it (its rent back to the payer) before raising."""
    sender.send(plan[:1])
    try:
        sender.send(plan[1:-1])
        sender.send(plan[-1:])
    except Exception:
        try:
            if sender.rpc.account(buffer.pubkey()) is not None:
                sender.send([loader.Step([loader.close(account=buffer.pubkey(), recipient=sender.payer.pubkey, authority=authority)], (authority,))])
        except Exception:  # noqa: BLE001 - the original failure is the one to report
            logger.warning("could not close buffer %s; its authority is the upgrade authority key", buffer.pubkey(), exc_info=True)
        raise


def _after_deployment_slot(rpc: ChainRpc, slot: int, timeout: float = 10.0) -> None:
    """The loader refuses to upgrade a program in the slot it was deployed in."""
    deadline = time.monotonic() + timeout
    while rpc.slot("confirmed") <= slot and time.monotonic() < deadline:
        time.sleep(0.1)


def _needed(rpc: ChainRpc, elf: bytes, *, first: bool) -> int:
    """Lamports the payer needs at most: the buffer's rent, and for a first deployment the
    program accounts' rent, plus fees."""
    need = rpc.minimum_balance_for_rent_exemption(loader.buffer_size(len(elf)))
    if first:
        need += rpc.minimum_balance_for_rent_exemption(loader.PROGRAM_ACCOUNT_SIZE) + rpc.minimum_balance_for_rent_exemption(loader.programdata_size(2 * len(elf)))
    return need + 5_000 * 2 * (len(elf) // 900 + 4)


def _check_funds(rpc: ChainRpc, payer, lamports: int) -> None:
    held = rpc.balance(payer.pubkey)
    if held < lamports:
        raise DeployError(f"The platform fee payer {payer.pubkey} holds {held} lamports on {rpc.cluster}; this step needs about {lamports}: fund it, then run the command again.")


def _authority_key(cluster: str):
    """The cluster's upgrade authority: the key its recorded programs use, else a new one."""
    from custody.services import managed_key_generate

    row = ProgramDeployment.objects.filter(cluster=cluster).select_related("upgrade_authority_key").order_by("pk").first()
    return row.upgrade_authority_key if row is not None else managed_key_generate()


def _held_key(pubkey: Pubkey):
    from custody.models import ManagedKey

    return ManagedKey.objects.filter(public_key=str(pubkey)).first()


def _record(cluster: str, name: str, program: Pubkey, onchain: _Onchain, elf: bytes, *, authority_key, program_key=None) -> None:
    values = {
        "program_id": str(program), "state": ProgramDeploymentState.DEPLOYED, "sha256": _sha256(elf), "size": len(elf),
        "max_data_len": onchain.room, "deployed_slot": onchain.slot, "upgrade_authority_key": authority_key,
    }
    if program_key is not None:
        values["program_key"] = program_key
    ProgramDeployment.objects.update_or_create(cluster=cluster, name=name, defaults=values)


def _upgrade(rpc, sender_for, cluster: str, name: str, program: Pubkey, onchain: _Onchain, elf: bytes) -> list[str]:
    if onchain.authority is None:
        raise DeployError(f"{name} at {program} on {cluster} has no upgrade authority (final; on CHAIN_LOCALNET: loaded at genesis): "
                          "it cannot be upgraded. On the embedded node, start from a fresh data directory to load the new build.")
    key = _held_key(onchain.authority)
    if key is None:
        raise DeployError(f"{name} at {program} on {cluster} is upgraded by {onchain.authority}, a key the service does not hold.")
    payer = fee_payers.platform_fee_payer(cluster)
    _check_funds(rpc, payer, _needed(rpc, elf, first=False))
    buffer = Keypair()
    sender = sender_for(payer, {buffer.pubkey(): buffer, onchain.authority: key})
    if len(elf) > onchain.room:
        extend = loader.extend_program(program=program, payer=payer.pubkey, additional_bytes=len(elf) - onchain.room)
        sender.send([loader.Step([extend], ())])
    _after_deployment_slot(rpc, onchain.slot)
    plan = loader.upgrade_plan(payer=payer.pubkey, program=program, buffer=buffer.pubkey(), authority=onchain.authority, program_bytes=elf,
                               buffer_rent=rpc.minimum_balance_for_rent_exemption(loader.buffer_size(len(elf))))
    _run_plan(sender, plan, buffer, onchain.authority)
    with transaction.atomic():
        _record(cluster, name, program, _onchain(rpc, program), elf, authority_key=key)
    return sender.signatures


def _first_deployment(rpc, sender_for, cluster: str, name: str, elf: bytes) -> tuple[Pubkey, list[str]]:
    """Deploy at a new id (or the id a run cut short recorded)."""
    from custody.services import managed_key_generate

    with transaction.atomic():
        row = ProgramDeployment.objects.select_for_update(of=("self",)).filter(cluster=cluster, name=name).select_related("program_key", "upgrade_authority_key").first()
        if row is None:
            program_key = managed_key_generate()
            row = ProgramDeployment.objects.create(cluster=cluster, name=name, program_id=program_key.public_key, program_key=program_key, upgrade_authority_key=_authority_key(cluster))
            platform_keys.platform_addresses_forget()
    if row.program_key is None:
        raise DeployError(f"{name} is recorded on {cluster} at {row.program_id} without its key, and no program is there.")
    program = Pubkey.from_string(row.program_id)
    payer = fee_payers.platform_fee_payer(cluster)
    _check_funds(rpc, payer, _needed(rpc, elf, first=True))
    authority = Pubkey.from_string(row.upgrade_authority_key.public_key)
    buffer = Keypair()
    sender = sender_for(payer, {buffer.pubkey(): buffer, authority: row.upgrade_authority_key, program: row.program_key})
    plan = loader.deploy_plan(
        payer=payer.pubkey, program=program, buffer=buffer.pubkey(), authority=authority, program_bytes=elf,
        buffer_rent=rpc.minimum_balance_for_rent_exemption(loader.buffer_size(len(elf))),
        program_rent=rpc.minimum_balance_for_rent_exemption(loader.PROGRAM_ACCOUNT_SIZE),
    )
    _run_plan(sender, plan, buffer, authority)
    with transaction.atomic():
        _record(cluster, name, program, _onchain(rpc, program), elf, authority_key=row.upgrade_authority_key)
    return program, sender.signatures


def program_deploy(*, cluster: str, name: str, elf: bytes) -> DeployResult:
    """Deploy or upgrade program ``name`` on ``cluster`` to ``elf`` (see the module docstring)."""
    rpc = rpc_for(cluster)

    def sender_for(payer, keys):
        return _Sender(rpc, payer, keys)

    digest = _sha256(elf)
    known = program_id(cluster, name)
    if known is None:
        pending = ProgramDeployment.objects.filter(cluster=cluster, name=name).first()
        known = Pubkey.from_string(pending.program_id) if pending is not None else None
    onchain = _onchain(rpc, known) if known is not None else None
    if onchain is None:
        if known is not None and not ProgramDeployment.objects.filter(cluster=cluster, name=name, program_id=str(known), program_key__isnull=False).exists():
            raise DeployError(f"LEDGER_PROGRAM_IDS names {known} for {name} on {cluster}, but no program is there and the service holds no key for that address: "
                              "remove the entry to deploy at a new id, or deploy it there yourself.")
        program, signatures = _first_deployment(rpc, sender_for, cluster, name, elf)
        return DeployResult(name, str(program), "deployed", digest, len(elf), signatures)
    if onchain.holds(elf):
        # A first deployment that landed in a run cut short before it was recorded.
        row = ProgramDeployment.objects.filter(cluster=cluster, name=name, program_id=str(known)).exclude(state=ProgramDeploymentState.DEPLOYED).select_related("upgrade_authority_key").first()
        if row is not None:
            _record(cluster, name, known, onchain, elf, authority_key=row.upgrade_authority_key)
        return DeployResult(name, str(known), "unchanged", digest, len(elf))
    signatures = _upgrade(rpc, sender_for, cluster, name, known, onchain, elf)
    return DeployResult(name, str(known), "upgraded", digest, len(elf), signatures)


def programs_deploy(*, cluster: str, names: list[str] | None = None, build_dir: Path | None = None, log: Callable[[str], None] = lambda text: None) -> list[DeployResult]:
    """Every project program (or ``names``) on ``cluster``, from the committed builds (or
    ``build_dir``'s ``<name>.so`` files); one result per program, in order."""
    rpc_for(cluster)  # an unknown cluster is refused before anything else
    results = []
    for name in names or programs.NAMES:
        elf = programs.program_bytes(name, build_dir)
        result = program_deploy(cluster=cluster, name=name, elf=elf)
        log(f"{name}: {result.action} at {result.program_id} ({result.size} bytes, sha256 {result.sha256}, {len(result.signatures)} transactions)")
        results.append(result)
    return results
