"""The most a message can cost its fee payer, read from the message alone (docs/transactions.md,
"Who pays the fee, and how much at most").

A validator charges the fee payer (account 0) 5,000 lamports for each signature the message
needs — its signers and the signatures its ed25519 / secp256k1 / secp256r1 precompile
instructions verify — plus the prioritization fee: the compute-unit price
(SetComputeUnitPrice, micro-lamports per unit) times the compute-unit limit, rounded up to a
whole lamport. The limit is SetComputeUnitLimit's (at most 1,400,000), or else a default:
Agave (since 2.2, SIMD-0170) gives each instruction of a builtin program — the Compute
Budget program's own included — 3,000 units and every other instruction 200,000, at most
1,400,000. Which programs are builtins changes as they migrate to BPF, so this counts
3,000 for each Compute Budget instruction and 200,000 for every other instruction: for a
message without SetComputeUnitLimit an upper bound of what a validator charges, never less
(exact with one). The engine budgets and limits with it while a transaction is in flight,
and with the landed transaction's ``meta.fee`` afterwards.

Pure: no chain, no database; the engine and the policy that bounds what the platform pays
(transactions/fees.py) read it the same way for every area.
"""

from __future__ import annotations

from dataclasses import dataclass

from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

LAMPORTS_PER_SIGNATURE = 5_000
MICRO_LAMPORTS_PER_LAMPORT = 1_000_000
MAX_COMPUTE_UNIT_LIMIT = 1_400_000
DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT = 200_000
MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT = 3_000

COMPUTE_BUDGET_PROGRAM = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
#: Precompiles whose instruction data starts with the number of signatures they verify.
PRECOMPILES = frozenset(Pubkey.from_string(a) for a in (
    "Ed25519SigVerify111111111111111111111111111",
    "KeccakSecp256k11111111111111111111111111111",
    "Secp256r1SigVerify1111111111111111111111111",
))
_SET_COMPUTE_UNIT_LIMIT = 2
_SET_COMPUTE_UNIT_PRICE = 3


@dataclass(frozen=True)
class MessageFee:
    """What a message can cost: ``signatures`` × 5,000 + the prioritization fee."""

    signatures: int
    compute_unit_limit: int
    compute_unit_price: int  # micro-lamports per compute unit
    explicit_limit: bool  # SetComputeUnitLimit present (else the default rule)

    @property
    def signature_fee(self) -> int:
        return LAMPORTS_PER_SIGNATURE * self.signatures

    @property
    def priority_fee(self) -> int:
        return prioritization_fee(self.compute_unit_price, self.compute_unit_limit)

    @property
    def total(self) -> int:
        return self.signature_fee + self.priority_fee


def prioritization_fee(price: int, limit: int) -> int:
    """⌈price × limit / 10^6⌉ lamports (price in micro-lamports per compute unit)."""
    return -(-int(price) * int(limit) // MICRO_LAMPORTS_PER_LAMPORT)


def default_compute_unit_limit(instructions: int, compute_budget_instructions: int = 0) -> int:
    """The limit of a message without SetComputeUnitLimit, of ``instructions`` that are not
    Compute Budget instructions and ``compute_budget_instructions`` that are (an upper
    bound: see above)."""
    units = DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT * int(instructions) + MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT * int(compute_budget_instructions)
    return min(MAX_COMPUTE_UNIT_LIMIT, units)


def price_within(max_priority_fee: int, limit: int) -> int:
    """The highest compute-unit price whose prioritization fee at ``limit`` units stays
    within ``max_priority_fee`` lamports."""
    if limit <= 0:
        return 0
    return int(max_priority_fee) * MICRO_LAMPORTS_PER_LAMPORT // int(limit)


def message_fee(message: Message | MessageV0) -> MessageFee:
    """The fee a validator charges at most for ``message`` (see the module docstring)."""
    keys = message.account_keys
    limit: int | None = None
    price = 0
    others = budget = 0
    precompile_signatures = 0
    for ix in message.instructions:
        program = keys[ix.program_id_index] if ix.program_id_index < len(keys) else None
        data = bytes(ix.data)
        if program == COMPUTE_BUDGET_PROGRAM:
            budget += 1
            if data[:1] == bytes([_SET_COMPUTE_UNIT_LIMIT]) and len(data) >= 5:
                limit = int.from_bytes(data[1:5], "little")
            elif data[:1] == bytes([_SET_COMPUTE_UNIT_PRICE]) and len(data) >= 9:
                price = int.from_bytes(data[1:9], "little")
            continue
        others += 1
        if program in PRECOMPILES and data:
            precompile_signatures += data[0]
    explicit = limit is not None
    limit = min(limit, MAX_COMPUTE_UNIT_LIMIT) if explicit else default_compute_unit_limit(others, budget)
    return MessageFee(message.header.num_required_signatures + precompile_signatures, limit, price, explicit)
