"""The project's onchain programs on each cluster: their ids and the names of their errors
(docs/programs.md, "Program ids").

A cluster's program ids come from ``settings.LEDGER_PROGRAM_IDS`` (CHAIN_LOCALNET's are the
fixed ids the embedded node loads at genesis; others are configured by the operator), else
from the ``ProgramDeployment`` rows ``deploy_programs`` records. A program's Custom(code)
error is named from its ABI (``programs/<name>/abi.py``), so a refusal in simulation can say
which check failed (``chain.errors.ProgramError``).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from django.conf import settings
from solders.pubkey import Pubkey

import programs
from ledger_project.api.errors import LedgerError


def program_id(cluster: str, name: str) -> Pubkey | None:
    """The id of program ``name`` on ``cluster``: configured, else recorded by
    deploy_programs once deployed; None when it has none."""
    if name not in programs.NAMES:
        raise KeyError(name)
    configured = settings.LEDGER_PROGRAM_IDS.get(cluster, {}).get(name)
    if configured:
        return Pubkey.from_string(configured)
    from .models import ProgramDeployment, ProgramDeploymentState

    recorded = ProgramDeployment.objects.filter(cluster=cluster, name=name, state=ProgramDeploymentState.DEPLOYED).values_list("program_id", flat=True).first()
    return Pubkey.from_string(recorded) if recorded else None


def require_program_id(cluster: str, name: str) -> Pubkey:
    """``program_id``, or 400 PROGRAM_NOT_DEPLOYED naming how to get one."""
    found = program_id(cluster, name)
    if found is None:
        raise LedgerError(
            f"The {name} program has no id on {cluster}: deploy it (python manage.py deploy_programs --cluster {cluster}) "
            f"or configure LEDGER_PROGRAM_IDS (docs/programs.md).", field="svmCluster", code="PROGRAM_NOT_DEPLOYED",
        )
    return found


def programs_on(cluster: str) -> dict[str, str]:
    """Every project program with an id on ``cluster``: address → name."""
    out = {}
    for name in programs.NAMES:
        found = program_id(cluster, name)
        if found is not None:
            out[str(found)] = name
    return out


@dataclass(frozen=True)
class ProgramFailure:
    """A project program's own refusal: which program, and its error from the ABI."""

    program: str  # the program's name (allowlist_hook, loan_vault)
    program_id: str
    code: int
    name: str
    message: str


_FAILED = re.compile(r"^Program (\S+) failed: custom program error: 0x([0-9a-fA-F]+)$")


def failure_from_logs(cluster: str, logs: list[str]) -> ProgramFailure | None:
    """The project program whose Custom(code) made the transaction fail, when it is one:
    the first "Program X failed: custom program error" line names the program where the
    error arose (a program that invoked it fails after it, with the same code)."""
    for line in logs or ():
        match = _FAILED.match(line)
        if match is None:
            continue
        name = programs_on(cluster).get(match.group(1))
        if name is None:
            return None
        code = int(match.group(2), 16)
        error_name = importlib.import_module(f"programs.{name}.client").error_name(code)
        if error_name is None:  # e.g. a token program's code passed through
            return None
        message = importlib.import_module(f"programs.{name}.abi").ABI.error_by_code(code).message
        return ProgramFailure(name, match.group(1), code, error_name, message)
    return None
