"""The fee of a transaction and whether its payer can pay it, by Agave's rules.

The rules of Agave master (workspace version 4.4.0-alpha.2 when read), unchanged since
SIMD-0170's `reserve_minimal_cus_for_builtin_instructions` became the rule (Agave 2.2/3.x),
read from anza-xyz/agave and anza-xyz/solana-sdk:

- signature fee (`fee/src/lib.rs`, calculate_signature_fee): 5,000 lamports for every
  transaction signature and every signature an ed25519, secp256k1 or secp256r1 precompile
  instruction declares (its data's first byte). The SIMD-0553 resource fee is behind
  feature gates not active on any cluster, so not applied here.
- prioritization fee (`compute-budget/src/compute_budget_limits.rs`,
  get_prioritization_fee): ceil(compute_unit_price × compute_unit_limit / 1,000,000)
  lamports, the price in micro-lamports per compute unit, saturating at u64::MAX.
- the compute unit limit (`compute-budget-instruction/src/compute_budget_instruction_details.rs`):
  SetComputeUnitLimit's value, else 3,000 (MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT) for
  every instruction of a builtin program — Compute Budget instructions included — and
  200,000 (DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT) for every other instruction; either way
  at most 1,400,000 (MAX_COMPUTE_UNIT_LIMIT). The builtins are
  `builtins-default-costs/src/lib.rs`' list (no migration in progress there: Stake and
  Address Lookup Table are BPF programs now, so 200,000 each).
- a duplicate Compute Budget instruction (DuplicateInstruction(i)), one that does not
  decode or a bad heap size (InstructionError(i, InvalidInstructionData)), or a loaded
  data size limit of 0 make the compute budget invalid: the runtime refuses the
  transaction, and getFeeForMessage answers the signature fee alone (bank.rs falls back
  to ComputeBudgetLimits::default(), price 0).
- the fee payer (`svm/src/account_loader.rs`, validate_fee_payer): no lamports →
  AccountNotFound; not a System account without data or an initialized nonce account →
  InvalidAccountForFee; less than the fee (plus a nonce account's rent-exempt minimum) →
  InsufficientFundsForFee; left with lamports but below the rent-exempt minimum when it
  was rent exempt before → InsufficientFundsForRent {account_index: 0}.
"""

from __future__ import annotations

from dataclasses import dataclass

from solders.account import Account
from solders.pubkey import Pubkey

from .errors import TRANSACTION_TEXTS, transaction_error_text

LAMPORTS_PER_SIGNATURE = 5000
MICRO_LAMPORTS_PER_LAMPORT = 1_000_000
DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT = 200_000
MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT = 3_000
MAX_COMPUTE_UNIT_LIMIT = 1_400_000
MIN_HEAP_FRAME_BYTES = 32 * 1024
MAX_HEAP_FRAME_BYTES = 256 * 1024
U64_MAX = 2**64 - 1
NONCE_SIZE = 80

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
COMPUTE_BUDGET = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
PRECOMPILES = frozenset(Pubkey.from_string(p) for p in (
    "Ed25519SigVerify111111111111111111111111111",
    "KeccakSecp256k11111111111111111111111111111",
    "Secp256r1SigVerify1111111111111111111111111",
))
BUILTINS = frozenset(Pubkey.from_string(p) for p in (
    "Vote111111111111111111111111111111111111111",
    "11111111111111111111111111111111",
    "ComputeBudget111111111111111111111111111111",
    "BPFLoaderUpgradeab1e11111111111111111111111",
    "BPFLoader1111111111111111111111111111111111",
    "BPFLoader2111111111111111111111111111111111",
    "LoaderV411111111111111111111111111111111111",
    "KeccakSecp256k11111111111111111111111111111",
    "Ed25519SigVerify111111111111111111111111111",
))

#: Load failures a validator commits fee-only (the fee paid, nothing else changed) that
#: LiteSVM refuses without charging: the node charges the signature fee for them.
FEES_ONLY = frozenset({"ProgramAccountNotFound", "InvalidProgramForExecution", "MaxLoadedAccountsDataSizeExceeded"})

#: TransactionError's Display of the fieldless variants: the node's one table (errors.py),
#: under the name this module has always used.
TEXTS = TRANSACTION_TEXTS


@dataclass(frozen=True)
class Fee:
    signature: int  # lamports: 5,000 per transaction and precompile signature
    priority: int  # lamports: the prioritization fee (0 when the compute budget is invalid)
    price: int  # micro-lamports per compute unit requested (SetComputeUnitPrice)
    limit: int  # the compute unit limit the prioritization fee is computed on
    valid: bool  # whether the Compute Budget instructions are valid (else the runtime refuses)

    @property
    def total(self) -> int:
        return self.signature + self.priority


def prioritization_fee(price: int, limit: int) -> int:
    """ceil(price × limit / 10^6) in lamports, in integers, saturating at u64::MAX."""
    return min(-(-price * limit // MICRO_LAMPORTS_PER_LAMPORT), U64_MAX)


def fee_of(message) -> Fee:
    """The fee a validator charges for ``message`` (legacy or v0). Never raises: an invalid
    compute budget gives the signature fee alone, as getFeeForMessage answers it."""
    keys = message.account_keys
    programs = [keys[ix.program_id_index] if ix.program_id_index < len(keys) else None for ix in message.instructions]
    signatures = message.header.num_required_signatures
    for program, ix in zip(programs, message.instructions):
        if program in PRECOMPILES:
            data = bytes(ix.data)
            signatures += data[0] if data else 0
    signature_fee = min(signatures * LAMPORTS_PER_SIGNATURE, U64_MAX)
    budget = _compute_budget(programs, message.instructions)
    if budget is None:
        return Fee(signature_fee, 0, 0, MAX_COMPUTE_UNIT_LIMIT, False)
    price, limit = budget
    return Fee(signature_fee, prioritization_fee(price, limit), price, limit, True)


def _compute_budget(programs, instructions) -> tuple[int, int] | None:
    """(price, limit) of the Compute Budget instructions, or None when a validator refuses
    them (a duplicate, undecodable data, a bad heap size, a zero data size limit). Borsh:
    a one-byte variant tag, then the little-endian value; trailing bytes are ignored."""
    requested: dict[int, int] = {}
    sizes = {1: 4, 2: 4, 3: 8, 4: 4}  # RequestHeapFrame, SetComputeUnitLimit, SetComputeUnitPrice, SetLoadedAccountsDataSizeLimit
    for program, ix in zip(programs, instructions):
        if program != COMPUTE_BUDGET:
            continue
        data = bytes(ix.data)
        tag = data[0] if data else None
        if tag not in sizes or len(data) < 1 + sizes[tag] or tag in requested:
            return None
        requested[tag] = int.from_bytes(data[1:1 + sizes[tag]], "little")
    heap = requested.get(1)
    if heap is not None and not (MIN_HEAP_FRAME_BYTES <= heap <= MAX_HEAP_FRAME_BYTES and heap % 1024 == 0):
        return None
    if requested.get(4, 1) == 0:
        return None
    if 2 in requested:
        limit = requested[2]
    else:
        limit = sum(MAX_BUILTIN_ALLOCATION_COMPUTE_UNIT_LIMIT if p in BUILTINS else DEFAULT_INSTRUCTION_COMPUTE_UNIT_LIMIT for p in programs)
    return requested.get(3, 0), min(limit, MAX_COMPUTE_UNIT_LIMIT)


def payer_refusal(payer, fee: int, minimum_balance) -> tuple[object, str] | None:
    """Why a validator refuses to charge ``fee`` to the fee payer account ``payer`` (a
    solders Account or None): (the error's JSON form, its text), or None when it can pay.
    ``minimum_balance(size)`` is the rent-exempt minimum of an account of that size."""
    lamports = payer.lamports if payer is not None else 0
    if lamports == 0:
        return "AccountNotFound", TEXTS["AccountNotFound"]
    data = bytes(payer.data)
    if payer.owner != SYSTEM_PROGRAM:
        return "InvalidAccountForFee", TEXTS["InvalidAccountForFee"]
    if not data:
        reserve = 0
    elif len(data) == NONCE_SIZE and data[:8] == b"\x01\x00\x00\x00\x01\x00\x00\x00":  # Versions::Current, Initialized
        reserve = minimum_balance(NONCE_SIZE)
    else:
        return "InvalidAccountForFee", TEXTS["InvalidAccountForFee"]
    if lamports < reserve + fee:
        return "InsufficientFundsForFee", TEXTS["InsufficientFundsForFee"]
    # Rent state transition (check_rent_state_with_account): a payer that was rent exempt
    # may end at 0 or still exempt, never in between; one already below stays allowed.
    exempt = minimum_balance(len(data))
    after = lamports - fee
    if lamports >= exempt and 0 < after < exempt:
        err = {"InsufficientFundsForRent": {"account_index": 0}}
        return err, transaction_error_text(err)
    return None


def debit(runtime, key: Pubkey, lamports: int) -> None:
    """Take ``lamports`` from the account at ``key`` in a LiteSVM ``runtime`` (the node
    mirrors every account a transaction wrote into the other runtime afterwards)."""
    if lamports:
        acc = runtime.get_account(key)
        runtime.set_account(key, Account(acc.lamports - lamports, bytes(acc.data), acc.owner, acc.executable, acc.rent_epoch))
