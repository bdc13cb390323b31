"""Build a transaction message from instructions and an svmTransactionConfig.

Pure with respect to the database: reads the chain only for the blockhash, nonce value,
lookup tables and fee estimates it needs (through ``rpc.ChainRpc``). The tenant's own
lookup tables come in as candidates (``TableCandidate``, from the database: see
lookup_tables/compression.py); the chain decides which of them a message
may load from (docs/lookup-tables.md, "Compression").
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
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

from . import fee_provider, fees
from .errors import ChainRefused, TransactionTooLarge
from .rpc import ChainRpc, LatestBlockhash

logger = logging.getLogger("ledger.transactions")

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
    written_slot: int | None = None  # the account's last known write: its nonce is read at least that recent


@dataclass(frozen=True)
class TableCandidate:
    """A lookup table of the tenant that the database records as usable (ACTIVE or FROZEN),
    and the addresses it held at its last confirmed change: what the builder chooses from.
    Whether a message may load through it is decided by the chain (``_lookup_tables``)."""

    address: Pubkey
    addresses: frozenset[Pubkey]


@dataclass
class BuildPlan:
    instructions: Sequence[Instruction]
    fee_payer: Pubkey
    version: str = "V0"  # V0 | LEGACY
    compute: ComputeUnits | None = None
    nonce: NonceLease | None = None  # DURABLE_NONCE when set
    lookup_tables: Sequence[Pubkey] = field(default_factory=tuple)
    #: V0 only: the tenant's tables the builder may add on its own (``choose_tables``).
    auto_lookup_tables: Sequence[TableCandidate] = field(default_factory=tuple)
    #: RECENT_BLOCKHASH: reuse a blockhash fetched at most this many seconds ago by this
    #: process (``recent_blockhash``); 0 fetches one for this message.
    blockhash_reuse_seconds: float = 0.0
    #: The most the prioritization fee may be (lamports), when the platform pays it
    #: (transactions/fees.py): an estimated price is lowered to fit; None: no ceiling.
    max_priority_fee: int | None = None


@dataclass
class BuiltMessage:
    message: Message | MessageV0
    blockhash: Hash
    last_valid_block_height: int | None
    reused_blockhash: bool = False
    #: V0: the addresses the message loads from lookup tables (writable, read-only), in the
    #: runtime's order after the static keys
    loaded: tuple[tuple[Pubkey, ...], tuple[Pubkey, ...]] = ((), ())

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


def nonce_value(rpc: ChainRpc, address: Pubkey, *, min_context_slot: int | None = None) -> Hash:
    """The durable nonce stored in a nonce account (bytes 40..72 of its state), read at a
    slot no older than ``min_context_slot`` (the slot of a write of it the caller knows of)."""
    account = rpc.account(address, min_context_slot=min_context_slot)
    if account is None or len(account.data) < NONCE_ACCOUNT_SIZE:
        raise ChainRefused(f"{address} is not an initialized nonce account.", code="INVALID_NONCE_ACCOUNT")
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
    """priceEstimate (PARTNER_FEE_PROVIDER, DEFAULT strategy, RECOMMENDED level) for the
    accounts this transaction writes: the cluster's fee provider's recommended price, else
    (none configured, or it failed) the median of recent non-zero prioritization fees; 0
    when nobody paid one (chain/fee_provider.py). At most _PRICE_CAP either way; the
    payer's ceiling is applied by ``_build``."""
    return min(fee_provider.estimate(rpc, _writable(instructions)), _PRICE_CAP)


ADDRESS_LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")


#: A table's deactivation_slot while it is not deactivated (u64::MAX).
NOT_DEACTIVATED = 2**64 - 1
#: At most this many of the tenant's own tables are added to one message.
MAX_AUTO_TABLES = 4
#: A table is worth adding when it stands for at least this many of the message's keys: it
#: costs its own 32-byte address and two length bytes; each key it stands for saves 31.
MIN_KEYS_PER_TABLE = 2


def lookupable_keys(instructions: Sequence[Instruction], fee_payer: Pubkey) -> set[Pubkey]:
    """The keys of a message a lookup table may stand for: neither a signer (the fee payer
    included) nor an invoked program (the runtime loads both from the static keys)."""
    signers = {fee_payer} | {meta.pubkey for ix in instructions for meta in ix.accounts if meta.is_signer}
    programs = {ix.program_id for ix in instructions}
    return {meta.pubkey for ix in instructions for meta in ix.accounts} - signers - programs


def choose_tables(instructions: Sequence[Instruction], fee_payer: Pubkey, candidates: Sequence[TableCandidate], *, exclude: Sequence[Pubkey] = ()) -> list[TableCandidate]:
    """The few candidates that stand for most of the message's keys, greedily: each round
    takes the table covering the most keys no chosen table covers yet (the first such, in
    the candidates' order, on a tie), while it covers at least MIN_KEYS_PER_TABLE, up to
    MAX_AUTO_TABLES tables. Pure: no chain, no database."""
    wanted = lookupable_keys(instructions, fee_payer)
    pool = [c for c in candidates if c.address not in set(exclude)]
    chosen: list[TableCandidate] = []
    while wanted and pool and len(chosen) < MAX_AUTO_TABLES:
        best = max(pool, key=lambda c: len(wanted & c.addresses))
        if len(wanted & best.addresses) < MIN_KEYS_PER_TABLE:
            break
        chosen.append(best)
        wanted -= best.addresses
        pool.remove(best)
    return chosen


def _loadable(table: AddressLookupTable, slot: int) -> list[Pubkey]:
    """The addresses a message executed after ``slot`` may load: addresses appended in the
    table's last_extended_slot become loadable only in a later slot (the runtime's rule)."""
    addresses = list(table.addresses)
    if table.meta.last_extended_slot >= slot:
        return addresses[: table.meta.last_extended_slot_start_index]
    return addresses


def _table_of(account) -> AddressLookupTable | None:
    if account is None or account.owner != ADDRESS_LOOKUP_TABLE_PROGRAM:
        return None
    try:
        return AddressLookupTable.deserialize(bytes(account.data))
    except ValueError:
        return None


def _lookup_tables(rpc: ChainRpc, addresses: Sequence[Pubkey], auto: Sequence[TableCandidate] = ()) -> list[AddressLookupTableAccount]:
    """The tables named in svmTransactionConfig.addressLookupTables (each must be a table:
    400 INVALID_LOOKUP_TABLE) and the tenant's tables the builder chose, read from the chain
    in one call: a chosen table that is gone, not a table or deactivated is left out, and
    every table offers only the addresses a message may load now."""
    if not addresses and not auto:
        return []
    read = rpc.read_accounts([str(a) for a in [*addresses, *(c.address for c in auto)]])
    tables = []
    for index, address in enumerate(addresses):
        field = f"config.lookup_tables[{index}]"  # a TxPlan's path; the API's door names it in the request
        account = read.accounts[str(address)]
        if account is None:
            raise ChainRefused(f"Address lookup table {address} does not exist.", field=field, code="INVALID_LOOKUP_TABLE")
        # Any existing account can be named: only one the lookup-table program owns is a table.
        table = _table_of(account)
        if table is None:
            raise ChainRefused(f"{address} is not an address lookup table.", field=field, code="INVALID_LOOKUP_TABLE")
        tables.append(AddressLookupTableAccount(address, _loadable(table, read.slot)))
    for candidate in auto:
        table = _table_of(read.accounts[str(candidate.address)])
        if table is None or table.meta.deactivation_slot != NOT_DEACTIVATED:
            # The database is behind the chain (closed or deactivated outside the service):
            # the message is built without it; the table's next confirmed change corrects the row.
            logger.info("lookup table %s is not usable on chain; not used", candidate.address)
            continue
        tables.append(AddressLookupTableAccount(candidate.address, _loadable(table, read.slot)))
    return tables


class _RecentBlockhash:
    """One cluster's latest blockhash as this process last fetched it, and digests of the
    messages built on it since (``recent_blockhash``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fetched_at = 0.0
        self.value: LatestBlockhash | None = None
        self.messages: set[bytes] = set()


_recent: dict[str, _RecentBlockhash] = {}


def recent_blockhash(rpc: ChainRpc, max_age: float) -> tuple[LatestBlockhash, bool]:
    """The latest blockhash, reused for ``max_age`` seconds per process and cluster
    (docs/performance.md, "Blockhash reuse"): one getLatestBlockhash per window instead of
    one per request. Returns it and whether it was reused.

    Its ``last_valid_block_height`` is the blockhash's own (the node answered both
    together), so the expiry check stays exact; a transaction built on a reused blockhash
    only has up to ``max_age`` seconds less of its ~60-90 s lifetime left."""
    entry = _recent.setdefault(rpc.cluster, _RecentBlockhash())
    now = time.monotonic()
    with entry.lock:
        if entry.value is not None and now - entry.fetched_at < max_age:
            return entry.value, True
    latest = rpc.latest_blockhash()
    with entry.lock:
        if entry.value is None or latest.blockhash != entry.value.blockhash:
            entry.messages = set()
        # The age counts from before the fetch: never longer than max_age.
        entry.value, entry.fetched_at = latest, now
    return latest, False


def _first_on_blockhash(rpc: ChainRpc, blockhash: Hash, message: bytes) -> bool:
    """Whether ``message`` is new on the reused ``blockhash`` in this process: the same
    instructions built twice on one blockhash are one transaction (one signature, executed
    once), which a fresh blockhash per request made unlikely (operations that may repeat
    one message, such as a freeze, a thaw and a freeze again, within one slot only)."""
    entry = _recent.get(rpc.cluster)
    if entry is None:
        return True
    digest = hashlib.blake2b(message, digest_size=16).digest()
    with entry.lock:
        if entry.value is None or entry.value.blockhash != blockhash:
            return True
        if digest in entry.messages:
            return False
        entry.messages.add(digest)
        return True


def forget_blockhash(rpc: ChainRpc) -> None:
    """Drop the reused blockhash (the node did not know it): the next build fetches one."""
    entry = _recent.get(rpc.cluster)
    if entry is not None:
        with entry.lock:
            entry.value, entry.messages = None, set()


def recent_blockhashes_clear() -> None:
    _recent.clear()


def build(plan: BuildPlan, rpc: ChainRpc) -> BuiltMessage:
    built = _build(plan, rpc, reuse=plan.blockhash_reuse_seconds > 0)
    if plan.nonce is None and not _first_on_blockhash(rpc, built.blockhash, built.to_bytes()) and built.reused_blockhash:
        # This process built this very message on the reused blockhash already: a fresh one.
        built = _build(plan, rpc, reuse=False)
        _first_on_blockhash(rpc, built.blockhash, built.to_bytes())
    return built


def loaded_addresses(message: MessageV0, tables: Sequence[AddressLookupTableAccount]) -> tuple[tuple[Pubkey, ...], tuple[Pubkey, ...]]:
    """The addresses a V0 message loads from ``tables``: writable ones, then read-only ones."""
    by_key = {t.key: t.addresses for t in tables}
    writable: list[Pubkey] = []
    readonly: list[Pubkey] = []
    for lookup in message.address_table_lookups:
        addresses = by_key[lookup.account_key]
        writable += [addresses[i] for i in bytes(lookup.writable_indexes)]
        readonly += [addresses[i] for i in bytes(lookup.readonly_indexes)]
    return tuple(writable), tuple(readonly)


def instructions_before(*, nonce: bool, compute: ComputeUnits | None) -> int | None:
    """How many instructions ``_build`` puts before the plan's own: the nonce advance, the
    compute-unit limit and price. None when it cannot be told before building: an estimated
    price is added only when the estimate is not 0. A caller reading an InstructionError's
    index back to its own instructions subtracts this (positions/batch_bisect.py); keep
    the two in step."""
    if compute is not None and compute.price is None and compute.estimate:
        return None
    return int(nonce) + (int(bool(compute.limit)) + int(bool(compute.price)) if compute is not None else 0)


def _build(plan: BuildPlan, rpc: ChainRpc, *, reuse: bool) -> BuiltMessage:
    instructions: list[Instruction] = []
    if plan.nonce is not None:
        # The runtime recognises a durable-nonce transaction by its first instruction.
        instructions.append(advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=plan.nonce.address, authorized_pubkey=plan.nonce.authority)))
    compute = plan.compute
    if compute is not None:
        if compute.limit:
            instructions.append(compute_budget.set_compute_unit_limit(compute.limit))
        price = compute.price if compute.price is not None else (estimate_price(rpc, plan.instructions) if compute.estimate else 0)
        if compute.price is None and price and plan.max_priority_fee is not None:
            # An estimate is the builder's own choice: it stays within what the payer allows
            # (an explicit price over it is refused before the build, transactions/fees.py).
            others = len(plan.instructions) + (plan.nonce is not None)
            # Without a limit of its own the message holds this SetComputeUnitPrice alone of the
            # Compute Budget program's instructions.
            limit = min(compute.limit, fees.MAX_COMPUTE_UNIT_LIMIT) if compute.limit else fees.default_compute_unit_limit(others, 1)
            price = min(price, fees.price_within(plan.max_priority_fee, limit))
        if price:
            instructions.append(compute_budget.set_compute_unit_price(price))
    instructions.extend(plan.instructions)

    reused = False
    if plan.nonce is not None:
        blockhash, last_valid = nonce_value(rpc, plan.nonce.address, min_context_slot=plan.nonce.written_slot), None
    elif reuse:
        latest, reused = recent_blockhash(rpc, plan.blockhash_reuse_seconds)
        blockhash, last_valid = latest.blockhash, latest.last_valid_block_height
    else:
        latest, _ = recent_blockhash(rpc, 0.0)  # fresh, and the next reuse starts from it
        blockhash, last_valid = latest.blockhash, latest.last_valid_block_height

    loaded: tuple[tuple[Pubkey, ...], tuple[Pubkey, ...]] = ((), ())
    if plan.version == "LEGACY":
        if plan.lookup_tables:
            raise ChainRefused("Address lookup tables need transactionVersion V0.", field="config.version", code="INVALID_ENUM")
        message: Message | MessageV0 = Message.new_with_blockhash(instructions, plan.fee_payer, blockhash)
    else:
        auto = choose_tables(plan.instructions, plan.fee_payer, plan.auto_lookup_tables, exclude=plan.lookup_tables)
        if plan.nonce is not None:
            # The runtime finds a durable nonce among the static keys only.
            auto = [c for c in auto if plan.nonce.address not in c.addresses]
        tables = _lookup_tables(rpc, plan.lookup_tables, auto)
        message = MessageV0.try_compile(plan.fee_payer, instructions, tables, blockhash)
        loaded = loaded_addresses(message, tables)
    built = BuiltMessage(message, blockhash, last_valid, reused_blockhash=reused, loaded=loaded)
    size = built.serialized_size()
    if size > MAX_TRANSACTION_SIZE:
        raise TransactionTooLarge(
            f"The transaction would be {size} bytes; the network accepts at most {MAX_TRANSACTION_SIZE}. "
            "Split the operation, use transactionVersion V0 with an address lookup table, or move data (e.g. metadata) to a follow-up update.",
            extra={"size": size},
        )
    return built
