"""The local node's state machine around LiteSVM: slots, blockhashes, execution, durability.

LiteSVM executes the real programs but keeps no history, one blockhash and no disk
state. The node adds what a cluster has: a slot clock (a slot every 400 ms), a queue of
recent blockhashes valid for 150 slots, durable-nonce checks, duplicate-signature
refusal, and persistence of every executed transaction and the accounts it wrote
(store.py). All access to LiteSVM goes through one lock: it is not thread-safe.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from solders.account import Account
from solders.address_lookup_table_account import AddressLookupTable
from solders.clock import Clock
from solders.hash import Hash
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from . import tokens
from .store import GroupCommit, PendingWrite, Store, StoredAccount, StoredTransaction

SLOT_SECONDS = 0.4
MAX_PROCESSING_AGE = 150  # slots a blockhash stays valid
FINALIZED_DEPTH = 32
LAMPORTS_PER_SIGNATURE = 5000
FAUCET_LAMPORTS = 500_000_000 * 10**9
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
COMPUTE_BUDGET = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
ADDRESS_LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")
ADVANCE_NONCE = (4).to_bytes(4, "little")


def durable_nonce_of(blockhash: Hash) -> bytes:
    """What a nonce account stores when advanced under ``blockhash`` (the runtime's
    DurableNonce::from_blockhash)."""
    return hashlib.sha256(b"DURABLE_NONCE" + bytes(blockhash)).digest()


class RpcError(Exception):
    """A JSON-RPC error answer (code, message, data)."""

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


@dataclass
class Outcome:
    signature: str
    slot: int
    err: object  # JSON form of the TransactionError, or None
    logs: list[str]
    units: int
    return_data: object = None


def err_json(err) -> object:
    """A solders TransactionError in the RPC's JSON form."""
    from solders.transaction_status import TransactionStatus

    import json

    return json.loads(TransactionStatus(0, None, err, err, None).to_json())["err"]


class Node:
    def __init__(self, data_dir: Path, *, slot_seconds: float = SLOT_SECONDS):
        self.store = Store(Path(data_dir))
        self.commits = GroupCommit(self.store)
        # Under the asyncio server the commit happens at the end of the loop turn
        # (server.flush); used directly, each transaction commits before returning.
        self.defer_commits = False
        self.lock = threading.RLock()
        self.slot_seconds = slot_seconds
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
        self.recent: dict[str, int] = {}  # blockhash → slot it was issued in
        self.recent_order: deque[str] = deque()
        self.fees: deque[tuple[int, int, frozenset[str]]] = deque(maxlen=5000)  # (slot, price, writable)
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
                runtime.set_account(faucet.pubkey(), Account(FAUCET_LAMPORTS, b"", SYSTEM_PROGRAM, False, 0))
            store.commit_transaction(accounts=[StoredAccount(str(faucet.pubkey()), FAUCET_LAMPORTS, str(SYSTEM_PROGRAM), False, 0, b"")], deleted=[], tx=None, addresses=[])
        self.genesis_hash = genesis
        self.faucet = Keypair.from_base58_string(store.meta_get("faucet"))
        for acc in store.accounts():
            for runtime in self.runtimes:
                runtime.set_account(Pubkey.from_string(acc.pubkey), Account(acc.lamports, acc.data, Pubkey.from_string(acc.owner), acc.executable, acc.rent_epoch))
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
            self.slot_hashes.appendleft((slot, Hash.from_string(blockhash)))
        self.slot = int(store.meta_get("slot") or 0)
        self.transaction_count = store.transaction_count()
        self._advance_slot()  # the slot always moves on after a restart

    def _advance_slot(self) -> None:
        with self.lock:
            self.slot += 1
            clock = Clock(self.slot, 0, self.slot // 432_000, self.slot // 432_000 + 1, int(time.time()))
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
            while self.recent_order and self.slot - self.recent[self.recent_order[0]] > MAX_PROCESSING_AGE + 50:
                self.recent.pop(self.recent_order.popleft(), None)
            self.store.meta_set("blockhash_generation", str(self.generation))
            self.store.record_blockhash(blockhash, self.slot, keep_from_slot=self.slot - MAX_PROCESSING_AGE - 50)

    def tick(self) -> None:
        """A new slot (the server calls this every slot_seconds)."""
        self.commits.flush()  # blockhash rows must not overtake executed transactions
        self._advance_slot()
        if self.slot % 10 == 0:
            self.store.checkpoint()  # the WAL's fsync, off the request path

    def warp(self, slots: int) -> int:
        """Advance ``slots`` slots at once, as that many ticks would (the local node's own
        method, for tests of rules counted in slots, e.g. a lookup table's deactivation
        cool-down). Blockhashes issued before fall out of their 150-slot window as they
        would with time; the Clock's wall time does not jump."""
        with self.lock:
            self.commits.flush()
            for _ in range(slots):
                self._advance_slot()
            return self.slot

    def stop(self) -> None:
        self.commits.flush()
        self.store.checkpoint()

    # --- blockhashes ----------------------------------------------------------------------
    def latest_blockhash(self) -> tuple[str, int]:
        with self.lock:
            blockhash = self.recent_order[-1]
            return blockhash, self.recent[blockhash] + MAX_PROCESSING_AGE

    def blockhash_valid(self, blockhash: str) -> bool:
        issued = self.recent.get(blockhash)
        return issued is not None and self.slot - issued <= MAX_PROCESSING_AGE

    # --- accounts -------------------------------------------------------------------------
    def account(self, pubkey: Pubkey) -> Account | None:
        with self.lock:
            acc = self.svm.get_account(pubkey)
        return acc if acc is not None and (acc.lamports > 0 or acc.executable) else None

    def minimum_balance(self, size: int) -> int:
        return self.svm.minimum_balance_for_rent_exemption(size)

    # --- execution ------------------------------------------------------------------------
    def _account_keys(self, message: Message | MessageV0) -> tuple[list[Pubkey], list[bool], dict]:
        """All account keys (static + loaded from lookup tables) and which are writable."""
        keys = list(message.account_keys)
        header = message.header
        signed, n = header.num_required_signatures, len(keys)
        writable = [i < signed - header.num_readonly_signed_accounts or signed <= i < n - header.num_readonly_unsigned_accounts for i in range(n)]
        loaded = {"writable": [], "readonly": []}
        if isinstance(message, MessageV0):
            for lookup in message.address_table_lookups:
                table = self.svm.get_account(lookup.account_key)
                if table is None:
                    raise RpcError(-32002, "Transaction simulation failed: Transaction loads an address table account that doesn't exist", {"err": "AddressLookupTableNotFound", "logs": []})
                addresses = AddressLookupTable.deserialize(bytes(table.data)).addresses
                try:
                    loaded["writable"] += [addresses[i] for i in lookup.writable_indexes]
                    loaded["readonly"] += [addresses[i] for i in lookup.readonly_indexes]
                except IndexError:
                    raise RpcError(-32002, "Transaction simulation failed: Transaction address table lookup uses an invalid index", {"err": "InvalidAddressLookupTableIndex", "logs": []})
            keys += loaded["writable"] + loaded["readonly"]
            writable += [True] * len(loaded["writable"]) + [False] * len(loaded["readonly"])
        return keys, writable, {k: [str(a) for a in v] for k, v in loaded.items()}

    def _nonce_ok(self, message, blockhash: str) -> bool:
        """A durable-nonce transaction's age check, as a validator's: the nonce account
        holds ``blockhash`` and can be advanced now. It cannot while the latest blockhash
        is the one the nonce was stored under (the stored value is derived from it): a
        validator answers BlockhashNotFound. LiteSVM would judge that by the transaction's
        own blockhash, the nonce itself, and let it through."""
        if not message.instructions:
            return False
        first = message.instructions[0]
        keys = message.account_keys
        if keys[first.program_id_index] != SYSTEM_PROGRAM or bytes(first.data)[:4] != ADVANCE_NONCE or not first.accounts:
            return False
        nonce = self.svm.get_account(keys[first.accounts[0]])
        if nonce is None or len(nonce.data) < 72:
            return False
        stored = bytes(nonce.data[40:72])
        return str(Hash(stored)) == blockhash and stored != durable_nonce_of(self.svm.latest_blockhash())

    def _fee(self, message) -> tuple[int, int]:
        """(fee charged in lamports, compute unit price requested).

        LiteSVM charges the signature fee only: a compute unit price is accepted and
        reported (getRecentPrioritizationFees) but not charged (docs/localnet.md)."""
        price = 0
        keys = message.account_keys
        for ix in message.instructions:
            data = bytes(ix.data)
            if keys[ix.program_id_index] == COMPUTE_BUDGET and data:
                if data[0] == 3 and len(data) >= 9:
                    price = int.from_bytes(data[1:9], "little")
        return LAMPORTS_PER_SIGNATURE * message.header.num_required_signatures, price

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
            if not self.blockhash_valid(blockhash) and not self._nonce_ok(message, blockhash):
                return self._refuse("BlockhashNotFound", "Blockhash not found", preflight, signature)
            keys, writable, loaded = self._account_keys(message)
            runtime = self._runtime_for(message)
            before = {k: runtime.get_account(k) for k in keys}
            result = runtime.send_transaction(tx)
            failed = isinstance(result, FailedTransactionMetadata)
            meta = result.meta() if failed else result
            logs = list(meta.logs())
            units = meta.compute_units_consumed()
            err = err_json(result.err()) if failed else None
            if failed and (preflight or err == "SignatureFailure"):
                for key, acc in before.items():  # undo the fee (and any nonce advance)
                    if acc is not None and writable[keys.index(key)]:
                        runtime.set_account(key, acc)
                if err == "SignatureFailure":
                    raise RpcError(-32003, "Transaction signature verification failure")
                raise RpcError(-32002, f"Transaction simulation failed: {_describe(err)}", {"err": err, "logs": logs, "accounts": None, "unitsConsumed": units, "returnData": None})
            outcome = self._record(runtime, tx, raw, signature, keys, writable, loaded, before, err, logs, units, meta)
            if not self.defer_commits:
                self.commits.flush()
        return outcome

    def _refuse(self, err: str, text: str, preflight: bool, signature: str) -> Outcome:
        if preflight:
            raise RpcError(-32002, f"Transaction simulation failed: {text}", {"err": err, "logs": [], "accounts": None, "unitsConsumed": 0, "returnData": None})
        # Without preflight a real node accepts the bytes and drops them; so do we.
        return Outcome(signature, self.slot, err, [], 0)

    def _runtime_for(self, message):
        programs = {message.account_keys[ix.program_id_index] for ix in message.instructions}
        return self.svm_alt if ADDRESS_LOOKUP_TABLE_PROGRAM in programs else self.svm

    def _mirror(self, runtime, after: dict, writable_keys) -> None:
        """Copy what a transaction wrote into the other runtime."""
        other = self.svm_alt if runtime is self.svm else self.svm
        for key in writable_keys:
            acc = after[key]
            other.set_account(key, acc if acc is not None else Account(0, b"", SYSTEM_PROGRAM, False, 0))

    def _record(self, runtime, tx, raw, signature, keys, writable, loaded, before, err, logs, units, meta) -> Outcome:
        after = {k: runtime.get_account(k) for k in keys}
        self._mirror(runtime, after, [k for k, w in zip(keys, writable) if w])
        changed, deleted = [], []
        for key, is_writable in zip(keys, writable):
            if not is_writable:
                continue
            acc = after[key]
            if acc is None or (acc.lamports == 0 and not acc.executable):
                deleted.append(str(key))
            elif not acc.executable:
                changed.append(StoredAccount(str(key), acc.lamports, str(acc.owner), acc.executable, acc.rent_epoch, bytes(acc.data)))
        fee, price = self._fee(tx.message)
        record_meta = {
            "fee": fee,
            "preBalances": [a.lamports if a else 0 for a in (before[k] for k in keys)],
            "postBalances": [a.lamports if a else 0 for a in (after[k] for k in keys)],
            "preTokenBalances": tokens.token_balances(keys, before, self.svm.get_account),
            "postTokenBalances": tokens.token_balances(keys, after, self.svm.get_account),
            "logMessages": logs,
            "computeUnitsConsumed": units,
            "innerInstructions": _inner(meta),
            "loadedAddresses": loaded,
            "version": 0 if isinstance(tx.message, MessageV0) else "legacy",
        }
        stored = StoredTransaction(0, signature, self.slot, int(time.time()), raw, err, record_meta)
        self.commits.enqueue(PendingWrite(changed, deleted, stored, [str(k) for k in keys]))
        self.transaction_count += 1
        if price:
            self.fees.append((self.slot, price, frozenset(str(k) for k, w in zip(keys, writable) if w)))
        return Outcome(signature, self.slot, err, logs, units)

    def simulate(self, raw: bytes, *, sig_verify: bool, replace_blockhash: bool) -> dict:
        try:
            tx = VersionedTransaction.from_bytes(raw)
        except ValueError as exc:
            raise RpcError(-32602, f"failed to deserialize transaction: {exc}")
        with self.lock:
            if sig_verify and not all(tx.verify_with_results()):
                raise RpcError(-32003, "Transaction signature verification failure")
            message = tx.message
            replacement = None
            if replace_blockhash:
                blockhash, last_valid = self.latest_blockhash()
                replacement = {"blockhash": blockhash, "lastValidBlockHeight": last_valid}
            elif not self.blockhash_valid(str(message.recent_blockhash)) and not self._nonce_ok(message, str(message.recent_blockhash)):
                return {"err": "BlockhashNotFound", "logs": [], "accounts": None, "unitsConsumed": 0, "returnData": None, "replacementBlockhash": None}
            runtime = self._runtime_for(message)
            if not sig_verify:
                runtime.with_sigverify(False)
            try:
                result = runtime.simulate_transaction(tx)
            finally:
                if not sig_verify:
                    runtime.with_sigverify(True)
            failed = isinstance(result, FailedTransactionMetadata)
            meta = result.meta() if failed else result.meta()
            return {
                "err": err_json(result.err()) if failed else None,
                "logs": list(meta.logs()),
                "accounts": None,
                "unitsConsumed": meta.compute_units_consumed(),
                "returnData": None,
                "innerInstructions": None,
                "replacementBlockhash": replacement,
            }

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


def _describe(err) -> str:
    if isinstance(err, dict) and "InstructionError" in err:
        index, detail = err["InstructionError"]
        if isinstance(detail, dict) and "Custom" in detail:
            return f"Error processing Instruction {index}: custom program error: {hex(detail['Custom'])}"
        return f"Error processing Instruction {index}: {detail}"
    return str(err)


def _inner(meta) -> list[dict]:
    out = []
    for index, group in enumerate(meta.inner_instructions()):
        if not group:
            continue
        out.append({
            "index": index,
            "instructions": [
                {"programIdIndex": ix.program_id_index, "accounts": list(ix.accounts), "data": _b58(bytes(ix.data)), "stackHeight": inner.stack_height()}
                for inner in group
                for ix in (inner.instruction(),)
            ],
        })
    return out


def _b58(data: bytes) -> str:
    from ledger_project.base58 import b58encode

    return b58encode(data)
