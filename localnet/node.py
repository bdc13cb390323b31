"""The local node's state machine around LiteSVM: slots, blockhashes, execution, durability.

LiteSVM executes the real programs but keeps no history, one blockhash and no disk
state. The node adds what a cluster has: a slot clock (a slot every 400 ms), a queue of
recent blockhashes valid for 150 slots, durable-nonce checks, duplicate-signature
refusal, and persistence of every executed transaction and the accounts it wrote
(store.py). All access to LiteSVM goes through one lock: it is not thread-safe.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from solders.account import Account
from solders.clock import Clock
from solders.epoch_schedule import EpochSchedule
from solders.hash import Hash
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from . import admission, fees, programs, tokens
from . import genesis as accounts_at_genesis
from .simulation import loaded_accounts_data_size, preflight_data
from .encoding import inner_instructions
from .errors import RpcError
from .store import GroupCommit, PendingWrite, Store, StoredAccount, StoredBlock, StoredTransaction

SLOT_SECONDS = 0.4
MAX_PROCESSING_AGE = 150  # slots a blockhash stays valid
FINALIZED_DEPTH = 32
FAUCET_LAMPORTS = 500_000_000 * 10**9
ADDRESS_LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")
COMMITMENTS = ("processed", "confirmed", "finalized")
SAMPLE_SECONDS = 60  # a validator's performance sample period
MAX_SAMPLES = 720  # samples kept (12 hours of 60 s samples, as a validator keeps)


@dataclass
class Outcome:
    signature: str
    slot: int
    err: object  # JSON form of the TransactionError, or None
    logs: list[str]
    units: int
    return_data: object = None


class Node:
    def __init__(self, data_dir: Path, *, slot_seconds: float = SLOT_SECONDS, sample_seconds: float = SAMPLE_SECONDS, bpf_programs: tuple = (), token_2022_native_mint: bool = False):
        self.store = Store(Path(data_dir))
        self.commits = GroupCommit(self.store)
        # Under the asyncio server the commit happens at the end of the loop turn
        # (server.flush); used directly, each transaction commits before returning.
        self.defer_commits = False
        self.lock = threading.RLock()
        self.slot_seconds = slot_seconds
        self.bpf_programs = tuple(bpf_programs)  # (address, ELF) loaded at genesis: --bpf-program
        self.token_2022_native_mint = token_2022_native_mint  # --token-2022-native-mint (genesis.py)
        # Two LiteSVM runtimes holding the same state (every write is mirrored). LiteSVM
        # 0.27.1's full runtime configuration (LiteSVM()) makes Token-2022 fail to
        # reallocate mints (token metadata: InvalidRealloc); one assembled from parts runs
        # Token-2022 correctly but cannot run the Address Lookup Table program, and solders
        # exposes no feature-set control. Transactions invoking the lookup-table program
        # run on the full runtime, all others on the assembled one (docs/localnet.md).
        self.svm = (
            LiteSVM.default().with_sysvars().with_builtins().with_default_programs()
            .with_sigverify(True).with_transaction_history(0).with_blockhash_check(False)
        )
        self.svm_alt = LiteSVM().with_transaction_history(0).with_blockhash_check(False)
        self.runtimes = (self.svm, self.svm_alt)
        for runtime in self.runtimes:  # epochs of 432,000 slots from slot 0 (getEpochSchedule)
            runtime.set_epoch_schedule(EpochSchedule.without_warmup())
        accounts_at_genesis.add_precompiles(self.svm)  # ed25519, secp256k1: the full runtime has them
        self.recent: dict[str, int] = {}  # blockhash → slot it was issued in
        self.recent_order: deque[str] = deque()
        self.fees: deque[tuple[int, int, frozenset[str]]] = deque(maxlen=5000)  # (slot, price, writable)
        # Reads at `finalized` see the state of FINALIZED_DEPTH slots ago: for every account
        # written since, the state it had before its first write in each slot (persisted
        # with the transaction, dropped once the slot is rooted). slot → keys written in it.
        self.versions: dict[str, list[tuple[int, Account | None]]] = {}
        self.slot_writes: dict[int, set[str]] = {}
        self.slot_tx_counts: dict[int, int] = {}
        self.hash_by_slot: dict[int, str] = {}
        #: objects told of each new slot: slot_advanced(slot, parent, root, rooted_writes)
        self.slot_listeners: list = []
        self.sample_seconds = sample_seconds
        self.rate_window: deque[tuple[float, int]] = deque(maxlen=128)
        self._boot()

    # --- boot and clock -------------------------------------------------------------------
    def _boot(self) -> None:
        store = self.store
        genesis = store.meta_get("genesis_hash")
        if genesis is None:
            genesis = str(Hash(secrets.token_bytes(32)))
            faucet = Keypair()
            store.meta_set("genesis_hash", genesis)
            store.meta_set("faucet", str(faucet))
            store.meta_set("blockhash_generation", "0")
            for runtime in self.runtimes:
                runtime.set_account(faucet.pubkey(), Account(FAUCET_LAMPORTS, b"", admission.SYSTEM_PROGRAM, False, 0))
            store.commit_transaction(accounts=[StoredAccount(str(faucet.pubkey()), FAUCET_LAMPORTS, str(admission.SYSTEM_PROGRAM), False, 0, b"")], deleted=[], tx=None, addresses=[])
        self.genesis_hash = genesis
        self.faucet = Keypair.from_base58_string(store.meta_get("faucet"))
        if store.meta_get("identity") is None:  # data directories from before getIdentity
            store.meta_set("identity", str(Keypair()))
        self.identity = Keypair.from_base58_string(store.meta_get("identity")).pubkey()
        for acc in programs.boot_order(store.accounts()):
            for runtime in self.runtimes:
                runtime.set_account(Pubkey.from_string(acc.pubkey), Account(acc.lamports, acc.data, Pubkey.from_string(acc.owner), acc.executable, acc.rent_epoch))
        programs.load_missing(self, self.bpf_programs)  # the project's programs at their fixed ids, and --bpf-program's (genesis)
        accounts_at_genesis.load_missing(self, token_2022=self.token_2022_native_mint)  # SPL Token's native mint (and Token-2022's, if asked)
        # LiteSVM derives each new blockhash from the previous one, starting from the same
        # seed on every boot: skip past every blockhash already handed out so none repeats
        # (a repeat would make a stored durable nonce look current).
        self.generation = int(store.meta_get("blockhash_generation") or 0)
        for _ in range(self.generation):
            for runtime in self.runtimes:
                runtime.expire_blockhash()
        self.slot_hashes: deque[tuple[int, Hash]] = deque(maxlen=512)
        for blockhash, slot in store.blockhashes():
            self.recent[blockhash] = slot
            self.recent_order.append(blockhash)
            self.hash_by_slot[slot] = blockhash
            self.slot_hashes.appendleft((slot, Hash.from_string(blockhash)))
        self.slot = int(store.meta_get("slot") or 0)
        self.transaction_count = store.transaction_count()
        for version_slot, pubkey, acc in store.account_versions():
            self.versions.setdefault(pubkey, []).append((version_slot, _account(acc)))
            self.slot_writes.setdefault(version_slot, set()).add(pubkey)
        for block in store.recent_blocks(FINALIZED_DEPTH + 8):
            self.slot_tx_counts[block.slot] = block.tx_count
        # The slot open when the node stopped: its start time is stored; its transactions
        # follow the previous block's (a version-1 data directory has no blocks: a scan).
        self.block_time = int(store.meta_get("slot_time") or time.time())
        # Seconds localnetWarpClock moved the Clock ahead of wall time (kept across restarts).
        self.clock_offset = int(store.meta_get("clock_offset") or 0)
        previous = store.block(self.slot - 1)
        if previous is not None:
            self.slot_first_seq = previous.first_seq + previous.tx_count
        else:
            first, count = store.slot_seq_range(self.slot)
            self.slot_first_seq = first if count else self.transaction_count + 1
        self.slot_tx_counts[self.slot] = self.transaction_count - self.slot_first_seq + 1
        self.sample_started, self.sample_tx, self.sample_slot = time.monotonic(), self.transaction_count, self.slot
        self._advance_slot()  # the slot always moves on after a restart

    def _advance_slot(self) -> None:
        with self.lock:
            closed = self.slot  # its block is complete now (none for the genesis slot 0)
            previous_hash = self.recent_order[-1] if self.recent_order else self.genesis_hash
            self.slot += 1
            now = int(time.time()) + self.clock_offset
            clock = Clock(self.slot, 0, self.slot // 432_000, self.slot // 432_000 + 1, now)
            for runtime in self.runtimes:
                runtime.set_clock(clock)
                runtime.expire_blockhash()
            self.generation += 1
            latest = self.svm.latest_blockhash()
            blockhash = str(latest)
            # SlotHashes sysvar: the Address Lookup Table program checks recent slots in it.
            self.slot_hashes.appendleft((self.slot, latest))
            for runtime in self.runtimes:
                runtime.set_slot_hashes(list(self.slot_hashes))
            self.recent[blockhash] = self.slot
            self.recent_order.append(blockhash)
            self.hash_by_slot[self.slot] = blockhash
            while self.recent_order and self.slot - self.recent[self.recent_order[0]] > MAX_PROCESSING_AGE + 50:
                self.hash_by_slot.pop(self.recent.pop(self.recent_order.popleft(), None), None)
            block = self._complete_block(closed, blockhash, previous_hash) if closed >= 1 else None
            self.block_time = now
            self.slot_first_seq = self.transaction_count + 1
            self.slot_tx_counts[self.slot] = 0
            root = self.root()
            rooted = {s: self.slot_writes.pop(s) for s in [s for s in self.slot_writes if s <= root]}
            for keys in rooted.values():
                for key in keys:
                    kept = [entry for entry in self.versions.get(key, ()) if entry[0] > root]
                    if kept:
                        self.versions[key] = kept
                    else:
                        self.versions.pop(key, None)
            for old in [s for s in self.slot_tx_counts if s < root - 8]:
                del self.slot_tx_counts[old]
            self.store.record_slot(blockhash=blockhash, slot=self.slot, slot_time=now, generation=self.generation,
                                   keep_from_slot=self.slot - MAX_PROCESSING_AGE - 50, block=block, root=root)
        for listener in self.slot_listeners:
            listener.slot_advanced(self.slot, self.slot - 1, root, rooted)

    def _complete_block(self, slot: int, blockhash: str, previous_hash: str) -> StoredBlock:
        """The block of ``slot``, which has just ended: its hash is the blockhash issued as
        the next slot starts (the one clients use from then on), its transactions those
        executed while it was open (a contiguous range of the execution order)."""
        first = self.slot_first_seq
        count = self.transaction_count - first + 1
        self.slot_tx_counts[slot] = count
        return StoredBlock(slot, blockhash, previous_hash, slot - 1, self.block_time, slot, first, count)

    def root(self) -> int:
        """The newest finalized slot: FINALIZED_DEPTH behind the tip."""
        return max(0, self.slot - FINALIZED_DEPTH)

    def tick(self) -> None:
        """A new slot (the server calls this every slot_seconds)."""
        self.commits.flush()  # blockhash rows must not overtake executed transactions
        self._advance_slot()
        if self.slot % 10 == 0:
            self.store.checkpoint()  # the WAL's fsync, off the request path
        now = time.monotonic()
        self.rate_window.append((now, self.transaction_count))
        if now - self.sample_started >= self.sample_seconds:
            self.store.record_sample(self.slot, self.transaction_count - self.sample_tx, self.slot - self.sample_slot, round(self.sample_seconds), MAX_SAMPLES)
            self.sample_started, self.sample_tx, self.sample_slot = now, self.transaction_count, self.slot

    def rate(self, seconds: float = 10.0) -> float:
        """Transactions per second over the last ``seconds`` (the status page)."""
        if not self.rate_window:
            return 0.0
        now, count = self.rate_window[-1]
        for then, before in self.rate_window:
            if now - then <= seconds:
                return (count - before) / (now - then) if now > then else 0.0
        return 0.0

    def warp(self, slots: int) -> int:
        """Advance ``slots`` slots at once, as that many ticks would (the local node's own
        method, for tests of rules counted in slots, e.g. a lookup table's deactivation
        cool-down). Blockhashes issued before fall out of their 150-slot window as they
        would with time; the Clock's wall time does not jump (warp_clock moves it)."""
        with self.lock:
            self.commits.flush()
            for _ in range(slots):
                self._advance_slot()
            return self.slot

    def warp_clock(self, seconds: int) -> int:
        """Move the Clock sysvar's unix_timestamp (and block times) ``seconds`` ahead of
        wall time for good, then start a new slot that carries it (the local node's own
        method, for tests of rules counted in seconds, e.g. a loan's interest and due
        time); the new unix_timestamp. Time never goes back: the offset only grows."""
        with self.lock:
            self.commits.flush()
            self.clock_offset += seconds
            self.store.meta_set("clock_offset", str(self.clock_offset))
            self._advance_slot()
            return self.block_time

    def stop(self) -> None:
        self.commits.flush()
        self.store.checkpoint()

    # --- blockhashes ----------------------------------------------------------------------
    def latest_blockhash(self, commitment: str = "confirmed") -> tuple[str, int]:
        """The newest blockhash of the bank at ``commitment``: at `finalized`, the hash of
        the rooted slot's block (issued as the next slot began)."""
        with self.lock:
            blockhash = self.recent_order[-1] if commitment != "finalized" else self.hash_by_slot.get(self.root() + 1, self.recent_order[0])
            return blockhash, self.recent[blockhash] + MAX_PROCESSING_AGE

    def blockhash_valid(self, blockhash: str, commitment: str = "confirmed") -> bool:
        issued = self.recent.get(blockhash)
        tip = self.slot if commitment != "finalized" else self.root() + 1
        return issued is not None and issued <= tip and tip - issued <= MAX_PROCESSING_AGE

    # --- commitment -----------------------------------------------------------------------
    def view_slot(self, commitment: str) -> int:
        """The slot of the bank a read at ``commitment`` sees. One node, no forks: whatever
        it executed is durable and final for `processed` and `confirmed` alike (the tip);
        `finalized` is FINALIZED_DEPTH slots behind (docs/localnet.md, Commitment)."""
        return self.root() if commitment == "finalized" else self.slot

    def transaction_count_at(self, slot: int) -> int:
        return self.transaction_count - sum(count for s, count in self.slot_tx_counts.items() if s > slot)

    # --- accounts -------------------------------------------------------------------------
    def account(self, pubkey: Pubkey, slot: int | None = None) -> Account | None:
        """An account as of the end of ``slot`` (default: the tip)."""
        with self.lock:
            acc = self.svm.get_account(pubkey)
            if slot is not None and slot < self.slot:
                for written, before in self.versions.get(str(pubkey), ()):
                    if written > slot:
                        acc = before
                        break
        return acc if acc is not None and (acc.lamports > 0 or acc.executable) else None

    def written_after(self, slot: int) -> list[str]:
        """Keys of the accounts written after ``slot`` (their state at ``slot`` differs from
        the tip's)."""
        return [key for key, entries in self.versions.items() if entries and entries[-1][0] > slot]

    def minimum_balance(self, size: int) -> int:
        return self.svm.minimum_balance_for_rent_exemption(size)

    # --- execution ------------------------------------------------------------------------
    def nonce_ok(self, message, blockhash: str) -> bool:
        return admission.nonce_ok(self.svm, message, blockhash)

    def fee(self, message) -> fees.Fee:
        return fees.fee_of(message)

    def _charge_fee(self, runtime, message, fee: fees.Fee, preflight: bool, signature: str) -> Outcome | None:
        """Agave's fee payer check with the full fee (LiteSVM's counts the signature fee
        only): when the payer cannot pay, -32002 with preflight, else dropped as a
        validator's banking stage drops it. Otherwise the prioritization fee is taken first,
        as a validator takes the whole fee before execution; LiteSVM takes the rest."""
        if not fee.valid:  # the runtime refuses the compute budget itself (DuplicateInstruction, ...)
            return None
        payer = message.account_keys[0]
        refusal = fees.payer_refusal(runtime.get_account(payer), fee.total, runtime.minimum_balance_for_rent_exemption)
        if refusal is not None:
            return self._refuse(refusal[0], refusal[1], preflight, signature)
        fees.debit(runtime, payer, fee.priority)
        return None

    def execute(self, raw: bytes, *, preflight: bool) -> Outcome:
        """Run one transaction. With preflight a failing transaction changes nothing and
        raises the -32002 preflight error; without it a failure is recorded (fee paid)."""
        try:
            tx = VersionedTransaction.from_bytes(raw)
        except ValueError as exc:
            raise RpcError(-32602, f"failed to deserialize transaction: {exc}")
        message = tx.message
        signature = str(tx.signatures[0])
        blockhash = str(message.recent_blockhash)
        with self.lock:
            if self.commits.is_pending(signature) or self.store.has_signature(signature):
                return self._refuse("AlreadyProcessed", "This transaction has already been processed", preflight, signature)
            if not self.blockhash_valid(blockhash) and not self.nonce_ok(message, blockhash):
                return self._refuse("BlockhashNotFound", "Blockhash not found", preflight, signature)
            keys, writable, loaded = admission.account_keys(self.svm, message)
            runtime = self._runtime_for(message)
            before = {k: runtime.get_account(k) for k in keys}
            fee = self.fee(message)
            refused = self._charge_fee(runtime, message, fee, preflight, signature)
            if refused is not None:
                return refused
            charged = runtime.get_account(keys[0])
            result = runtime.send_transaction(tx)
            failed = isinstance(result, FailedTransactionMetadata)
            meta = result.meta() if failed else result
            logs = list(meta.logs())
            units = meta.compute_units_consumed()
            err = admission.err_json(result.err()) if failed else None
            if failed and (preflight or err == "SignatureFailure"):
                for key, acc in before.items():  # undo the fee (and any nonce advance)
                    if acc is not None and writable[keys.index(key)]:
                        runtime.set_account(key, acc)
                if err == "SignatureFailure":
                    raise RpcError(-32003, "Transaction signature verification failure")
                size = loaded_accounts_data_size(keys, runtime.get_account, message)
                raise RpcError(-32002, f"Transaction simulation failed: {admission.describe(err)}", preflight_data(err, logs, units, meta, fee.total, size))
            if isinstance(err, str) and err in fees.FEES_ONLY and fee.valid and runtime.get_account(keys[0]) == charged:
                fees.debit(runtime, keys[0], fee.signature)  # LiteSVM charged nothing; a validator would
            outcome = self._record(runtime, tx, raw, signature, keys, writable, loaded, before, err, logs, units, meta, fee)
            if not self.defer_commits:
                self.commits.flush()
        return outcome

    def _refuse(self, err: str, text: str, preflight: bool, signature: str) -> Outcome:
        if preflight:
            raise RpcError(-32002, f"Transaction simulation failed: {text}", preflight_data(err, [], 0, None, None, 0))
        # Without preflight a real node accepts the bytes and drops them; so do we.
        return Outcome(signature, self.slot, err, [], 0)

    def _runtime_for(self, message):
        programs = {message.account_keys[ix.program_id_index] for ix in message.instructions}
        # The assembled runtime runs ed25519 and secp256k1 (accounts_at_genesis.add_precompiles) but
        # not secp256r1, behind a feature it does not activate: the full one runs it.
        return self.svm_alt if ADDRESS_LOOKUP_TABLE_PROGRAM in programs or accounts_at_genesis.SECP256R1 in programs else self.svm

    def _mirror(self, runtime, after: dict, writable_keys) -> None:
        """Copy what a transaction wrote into the other runtime."""
        other = self.svm_alt if runtime is self.svm else self.svm
        for key in programs.executable_last(writable_keys, after):
            acc = after[key]
            other.set_account(key, acc if acc is not None else Account(0, b"", admission.SYSTEM_PROGRAM, False, 0))

    def _record(self, runtime, tx, raw, signature, keys, writable, loaded, before, err, logs, units, meta, fee: fees.Fee) -> Outcome:
        after = {k: runtime.get_account(k) for k in keys}
        for key, is_writable in zip(keys, writable):  # Agave's rent epoch (accounts_at_genesis.with_rent_epoch)
            acc = after[key]
            if is_writable and acc is not None and acc.lamports > 0 and acc.rent_epoch != accounts_at_genesis.RENT_EXEMPT_RENT_EPOCH:
                after[key] = accounts_at_genesis.with_rent_epoch(before[key], acc)
                if after[key] is not acc:
                    runtime.set_account(key, after[key])
        self._mirror(runtime, after, [k for k, w in zip(keys, writable) if w])
        changed, deleted, versions = [], [], []
        written = self.slot_writes.setdefault(self.slot, set())
        for key, is_writable in zip(keys, writable):
            if not is_writable:
                continue
            skey = str(key)
            if skey not in written:  # first write in this slot: keep the state before it
                written.add(skey)
                prior = before[key]
                self.versions.setdefault(skey, []).append((self.slot, prior))
                versions.append((skey, _stored(skey, prior)))
            acc = after[key]
            if acc is None or (acc.lamports == 0 and not acc.executable):
                deleted.append(skey)
            else:  # executable ones too: deployed programs survive a restart
                changed.append(StoredAccount(skey, acc.lamports, str(acc.owner), acc.executable, acc.rent_epoch, bytes(acc.data)))
        record_meta = {
            "fee": fee.total,
            "preBalances": [a.lamports if a else 0 for a in (before[k] for k in keys)],
            "postBalances": [a.lamports if a else 0 for a in (after[k] for k in keys)],
            "preTokenBalances": tokens.token_balances(keys, before, self.svm.get_account),
            "postTokenBalances": tokens.token_balances(keys, after, self.svm.get_account),
            "logMessages": logs,
            "computeUnitsConsumed": units,
            "innerInstructions": inner_instructions(meta),
            "loadedAddresses": loaded,
            "version": 0 if isinstance(tx.message, MessageV0) else "legacy",
        }
        stored = StoredTransaction(0, signature, self.slot, self.block_time, raw, err, record_meta)
        self.commits.enqueue(PendingWrite(changed, deleted, stored, [str(k) for k in keys], versions))
        self.transaction_count += 1
        self.slot_tx_counts[self.slot] = self.slot_tx_counts.get(self.slot, 0) + 1
        if fee.price:
            self.fees.append((self.slot, fee.price, frozenset(str(k) for k, w in zip(keys, writable) if w)))
        return Outcome(signature, self.slot, err, logs, units)

    def airdrop(self, to: Pubkey, lamports: int) -> str:
        with self.lock:
            blockhash = self.svm.latest_blockhash()
        message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=self.faucet.pubkey(), to_pubkey=to, lamports=lamports))], self.faucet.pubkey(), blockhash)
        return self.execute(bytes(VersionedTransaction(message, [self.faucet])), preflight=True).signature

    # --- reads of history -----------------------------------------------------------------
    def confirmation(self, slot: int) -> tuple[int | None, str]:
        depth = self.slot - slot
        if depth >= FINALIZED_DEPTH:
            return None, "finalized"
        return depth, "confirmed"

    def prioritization_fees(self, addresses: list[str]) -> list[dict]:
        wanted = set(addresses)
        per_slot: dict[int, int] = {}
        for slot, price, writable in list(self.fees):
            if self.slot - slot > MAX_PROCESSING_AGE:
                continue
            if not wanted or wanted & writable:
                per_slot[slot] = min(per_slot.get(slot, price), price)
        first = max(1, self.slot - MAX_PROCESSING_AGE)
        return [{"slot": s, "prioritizationFee": per_slot.get(s, 0)} for s in range(first, self.slot + 1)]


def _account(stored: StoredAccount | None) -> Account | None:
    if stored is None:
        return None
    return Account(stored.lamports, stored.data, Pubkey.from_string(stored.owner), stored.executable, stored.rent_epoch)


def _stored(key: str, acc: Account | None) -> StoredAccount | None:
    if acc is None or (acc.lamports == 0 and not acc.executable):
        return None
    return StoredAccount(key, acc.lamports, str(acc.owner), acc.executable, acc.rent_epoch, bytes(acc.data))
