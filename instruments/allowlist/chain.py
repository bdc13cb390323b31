"""The allow-list as the chain has it, and the pieces Create Financial Instrument needs to
initialize one in the creation transaction. Reads and pure encoders only: no writes, so
instruments/services.py and positions can import it without importing the area's writes."""

from __future__ import annotations

from dataclasses import dataclass

from solders.instruction import Instruction
from solders.pubkey import Pubkey

from ledger_project.api.errors import LedgerError
from programs.allowlist_hook import abi
from programs.allowlist_hook import client as hook
from chain.rpc import rpc_for
from transactions.programs import program_id

#: A new allow-list holds this many owners unless the request says otherwise: the
#: program fixes the capacity at creation (it may grow an account by 10 KiB at most per
#: instruction), so the default is the most it allows.
DEFAULT_CAPACITY = abi.MAX_CAPACITY
MAX_CAPACITY = abi.MAX_CAPACITY
PROGRAM_NAME = "allowlist_hook"


@dataclass(frozen=True)
class ChainAllowList:
    """The decoded allow-list account (None fields: not initialized)."""

    program: Pubkey
    address: Pubkey
    decoded: hook.AllowList | None

    @property
    def owners(self) -> tuple[Pubkey, ...]:
        return self.decoded.owners if self.decoded is not None else ()


def allow_list_program(instrument) -> Pubkey | None:
    """The allow-list program's id when it is ``instrument``'s transfer hook, else None
    (another hook program, or none)."""
    hooked = instrument.transfer_hook_program_address if "TRANSFER_HOOK" in (instrument.extensions or []) else ""
    return hook_is_allow_list(instrument.cluster, hooked)


def hook_is_allow_list(cluster: str, hook_program: str | None) -> Pubkey | None:
    if not hook_program:
        return None
    program = program_id(cluster, PROGRAM_NAME)
    return program if program is not None and str(program) == hook_program else None


def allow_list_read(cluster: str, program: Pubkey, mint: Pubkey) -> ChainAllowList:
    """The mint's allow-list now (the account decoded with abi.ALLOW_LIST); ``decoded`` is
    None when the account does not exist or is not an allow-list of the program."""
    address = hook.allow_list_address(program, mint)[0]
    account = rpc_for(cluster).account(address)
    decoded = None
    if account is not None and account.owner == program:
        try:
            decoded = hook.decode_allow_list(bytes(account.data))
        except ValueError:
            decoded = None
    return ChainAllowList(program, address, decoded)


def instrument_allow_list(instrument) -> ChainAllowList | None:
    """``allow_list_read`` for an instrument; None when its hook is not the allow-list program."""
    program = allow_list_program(instrument)
    if program is None:
        return None
    return allow_list_read(instrument.cluster, program, Pubkey.from_string(instrument.address))


def ensure_owner_allowed(instrument, owner_address: str, *, field: str) -> None:
    """Positions: refuse, before anything is built, a position or a transfer whose owner the
    hook would refuse (docs/positions.md). Instruments without the allow-list hook pass."""
    listed = instrument_allow_list(instrument)
    if listed is None:
        return
    if listed.decoded is None:
        raise LedgerError(
            "The instrument's transfer hook is the allow-list program and its allow-list is not initialized, so no owner may hold "
            "or receive it (Initialize Allow-List, then Add Allow-List Owners).", field=field, code="ALLOW_LIST_NOT_INITIALIZED",
        )
    if Pubkey.from_string(owner_address) not in listed.owners:
        raise LedgerError(
            f"The owner {owner_address} is not on the instrument's allow-list: the transfer hook would refuse it "
            "(Add Allow-List Owners first).", field=field, code="OWNER_NOT_ALLOWED",
        )


def allow_list_rent(cluster: str, capacity: int) -> int:
    """Rent of the validation account and of an allow-list of ``capacity`` owners: the
    program creates both, funded by InitializeAllowList's payer."""
    rpc = rpc_for(cluster)
    return rpc.minimum_balance_for_rent_exemption(len(abi.VALIDATION_DATA)) + rpc.minimum_balance_for_rent_exemption(abi.allow_list_size(capacity))


def check_capacity(capacity: int | None, field: str) -> int:
    if capacity is None:
        return DEFAULT_CAPACITY
    if not 1 <= capacity <= MAX_CAPACITY:
        raise LedgerError(f"An allow-list holds 1 to {MAX_CAPACITY} owners (fixed when it is created).", field=field, code="OUT_OF_RANGE")
    return capacity


def initialize_instruction(*, program: Pubkey, payer: Pubkey, mint: Pubkey, mint_authority: Pubkey, authority: Pubkey, capacity: int) -> Instruction:
    return hook.initialize_allow_list(program=program, payer=payer, mint=mint, mint_authority=mint_authority, authority=authority, capacity=capacity)


@dataclass(frozen=True)
class CreatePlan:
    """Create Financial Instrument naming the allow-list program: InitializeAllowList goes
    into the creation transaction, after InitializeMint2; ``rent`` joins the funding."""

    program: Pubkey
    authority: Pubkey
    capacity: int
    rent: int

    def instruction(self, *, payer: Pubkey, mint: Pubkey, mint_authority: Pubkey) -> Instruction:
        return initialize_instruction(program=self.program, payer=payer, mint=mint, mint_authority=mint_authority, authority=self.authority, capacity=self.capacity)


def create_plan(tenant, cluster: str, data: dict, hook_program: str | None, auth: dict, prefix: str, *, resolve) -> CreatePlan | None:
    """The allow-list of a new instrument: when its transferHookProgram is the allow-list
    program. ``allowListAuthority`` (default: the transfer hook authority, else the mint
    authority) manages it; ``allowListCapacity`` owners fit (default 256). Either field
    with another hook program is 400 NOT_ALLOW_LIST_HOOK. ``resolve``: the area's authority
    lookup (instruments.services._authority)."""
    program = hook_is_allow_list(cluster, hook_program)
    if program is None:
        for name in ("allowListCapacity", "allowListAuthority"):
            if data.get(name) is not None:
                raise LedgerError("An allow-list needs transferHookProgram to be the project's allow-list program.", field=f"{prefix}.{name}", code="NOT_ALLOW_LIST_HOOK")
        return None
    capacity = check_capacity(data.get("allowListCapacity"), f"{prefix}.allowListCapacity")
    authority = resolve(tenant, cluster, data.get("allowListAuthority"), f"{prefix}.allowListAuthority") or auth.get("transferHook") or auth.get("mint")
    if authority is None:
        return None  # no mint authority: Create refuses it (REQUIRED) right after
    return CreatePlan(program, authority.pubkey, capacity, allow_list_rent(cluster, capacity))
