"""Build a transaction message from instructions and an svmTransactionConfig.

Pure with respect to the database: reads the chain only for the blockhash, nonce value,
lookup tables and fee estimates it needs (through ``rpc.ChainRpc``).
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass, field
from typing import Sequence

from solders import compute_budget
from solders.address_lookup_table_account import AddressLookupTable, AddressLookupTableAccount
from solders.hash import Hash
from solders.instruction import Instruction
from solders.message import Message, MessageV0, from_bytes_versioned, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import AdvanceNonceAccountParams, advance_nonce_account
from solders.transaction import VersionedTransaction

from .errors import TransactionTooLarge
from .rpc import ChainRpc

#: The network's packet limit for one serialized transaction (Limits 3).
MAX_TRANSACTION_SIZE = 1232
#: Recommended price floor/ceiling for the DEFAULT strategy (micro-lamports per CU).
_PRICE_CAP = 5_000_000
NONCE_ACCOUNT_SIZE = 80


@dataclass(frozen=True)
class ComputeUnits:
    limit: int | None = None
    price: int | None = None  # micro-lamports per compute unit
    estimate: bool = False  # priceEstimate: DEFAULT strategy, RECOMMENDED level


@dataclass(frozen=True)
class NonceLease:
    address: Pubkey
    authority: Pubkey


@dataclass
class BuildPlan:
    instructions: Sequence[Instruction]
    fee_payer: Pubkey
    version: str = "V0"  # V0 | LEGACY
    compute: ComputeUnits | None = None
    nonce: NonceLease | None = None  # DURABLE_NONCE when set
    lookup_tables: Sequence[Pubkey] = field(default_factory=tuple)


@dataclass
class BuiltMessage:
    message: Message | MessageV0
    blockhash: Hash
    last_valid_block_height: int | None

    @property
    def signers(self) -> list[Pubkey]:
        return list(self.message.account_keys[: self.message.header.num_required_signatures])

    def to_bytes(self) -> bytes:
        return message_bytes(self.message)

    def serialized_size(self) -> int:
        # shortvec(n) + n signatures + message; n < 128 so the shortvec is one byte.
        return 1 + 64 * len(self.signers) + len(self.to_bytes())


def message_bytes(message: Message | MessageV0) -> bytes:
    return to_bytes_versioned(message) if isinstance(message, MessageV0) else bytes(message)


def message_from_bytes(raw: bytes) -> Message | MessageV0:
    return from_bytes_versioned(raw)


def assemble(message: Message | MessageV0, signatures: dict[str, str]) -> VersionedTransaction:
    """The transaction with every signature known so far (default signature elsewhere)."""
    keys = message.account_keys[: message.header.num_required_signatures]
    sigs = [Signature.from_string(signatures[str(k)]) if str(k) in signatures else Signature.default() for k in keys]
    return VersionedTransaction.populate(message, sigs)


def nonce_value(rpc: ChainRpc, address: Pubkey) -> Hash:
    """The durable nonce stored in a nonce account (bytes 40..72 of its state)."""
    account = rpc.account(address)
    if account is None or len(account.data) < NONCE_ACCOUNT_SIZE:
        from ledger_project.api.errors import LedgerError

        raise LedgerError(f"{address} is not an initialized nonce account.", code="INVALID_NONCE_ACCOUNT")
    return Hash(bytes(account.data[40:72]))


def durable_nonce_of(blockhash: Hash) -> Hash:
    """The value a nonce account stores when initialized or advanced while ``blockhash`` is
    the cluster's latest: the runtime derives it (DurableNonce::from_blockhash, sha256 of
    "DURABLE_NONCE" and the blockhash), so it never equals a blockhash itself."""
    return Hash(hashlib.sha256(b"DURABLE_NONCE" + bytes(blockhash)).digest())


def _writable(instructions: Sequence[Instruction]) -> list[Pubkey]:
    seen: dict[Pubkey, None] = {}
    for ix in instructions:
        for meta in ix.accounts:
            if meta.is_writable:
                seen.setdefault(meta.pubkey)
    return list(seen)


def estimate_price(rpc: ChainRpc, instructions: Sequence[Instruction]) -> int:
    """DEFAULT strategy, RECOMMENDED level: the median of recent non-zero prioritization
    fees paid for the accounts this transaction writes (0 when nobody paid one)."""
    fees = [fee for fee in rpc.recent_prioritization_fees(_writable(instructions)[:128]) if fee > 0]
    return min(int(statistics.median(fees)), _PRICE_CAP) if fees else 0


ADDRESS_LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")


def _lookup_tables(rpc: ChainRpc, addresses: Sequence[Pubkey]) -> list[AddressLookupTableAccount]:
    from ledger_project.api.errors import LedgerError

    tables = []
    for index, (address, account) in enumerate(zip(addresses, rpc.accounts(list(addresses)))):
        field = f"svmTransactionConfig.addressLookupTables[{index}]"
        if account is None:
            raise LedgerError(f"Address lookup table {address} does not exist.", field=field, code="INVALID_LOOKUP_TABLE")
        # Any existing account can be named: only one the lookup-table program owns is a table.
        try:
            if account.owner != ADDRESS_LOOKUP_TABLE_PROGRAM:
                raise ValueError(f"owned by {account.owner}")
            table = AddressLookupTable.deserialize(bytes(account.data))
        except ValueError:
            raise LedgerError(f"{address} is not an address lookup table.", field=field, code="INVALID_LOOKUP_TABLE") from None
        tables.append(AddressLookupTableAccount(address, list(table.addresses)))
    return tables


def build(plan: BuildPlan, rpc: ChainRpc) -> BuiltMessage:
    instructions: list[Instruction] = []
    if plan.nonce is not None:
        # The runtime recognises a durable-nonce transaction by its first instruction.
        instructions.append(advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=plan.nonce.address, authorized_pubkey=plan.nonce.authority)))
    compute = plan.compute
    if compute is not None:
        if compute.limit:
            instructions.append(compute_budget.set_compute_unit_limit(compute.limit))
        price = compute.price if compute.price is not None else (estimate_price(rpc, plan.instructions) if compute.estimate else 0)
        if price:
            instructions.append(compute_budget.set_compute_unit_price(price))
    instructions.extend(plan.instructions)

    if plan.nonce is not None:
        blockhash, last_valid = nonce_value(rpc, plan.nonce.address), None
    else:
        latest = rpc.latest_blockhash()
        blockhash, last_valid = latest.blockhash, latest.last_valid_block_height

    if plan.version == "LEGACY":
        if plan.lookup_tables:
            from ledger_project.api.errors import LedgerError

            raise LedgerError("Address lookup tables need transactionVersion V0.", field="svmTransactionConfig.transactionVersion", code="INVALID_ENUM")
        message: Message | MessageV0 = Message.new_with_blockhash(instructions, plan.fee_payer, blockhash)
    else:
        message = MessageV0.try_compile(plan.fee_payer, instructions, _lookup_tables(rpc, plan.lookup_tables), blockhash)
    built = BuiltMessage(message, blockhash, last_valid)
    size = built.serialized_size()
    if size > MAX_TRANSACTION_SIZE:
        raise TransactionTooLarge(
            f"The transaction would be {size} bytes; the network accepts at most {MAX_TRANSACTION_SIZE}. "
            "Split the operation, use transactionVersion V0 with an address lookup table, or move data (e.g. metadata) to a follow-up update.",
            field="itemData",
        )
    return built
