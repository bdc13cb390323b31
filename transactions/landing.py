"""Did a held transaction land without the service sending it? (docs/transactions.md, "Statuses")

A transaction's ``onchain_id`` is its fee payer's signature. When the fee payer signs off
platform, the service does not know that signature until Sign Transaction brings it —
yet whoever holds the other signatures (the service hands its own out) can complete the
transaction and send it themselves. Looking it up by signature is then impossible, so
before such a transaction is called EXPIRED the history of an address it must have
touched is read back to the moment it was built, and each candidate's message is compared
with the stored one: the message bytes are what every signature covers, so an equal
message is this transaction.

Bounded: newest first, at most ``budget`` signatures per call, never past the
transaction's lower bound (the block height its blockhash was issued at, or the time it
was recorded, less a clock margin); a scan cut short returns a cursor the next call
resumes from. Resuming is sound because it runs only once the lifetime is over: nothing
newer than the first page can be this transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from chain.rpc import ChainRpc
from .models import MessageLifetime, Transaction

logger = logging.getLogger("ledger.transactions")

#: Slots a blockhash stays valid: lastValidBlockHeight - MAX_PROCESSING_AGE is the block
#: height it was issued at, and a slot is never lower than its block height.
MAX_PROCESSING_AGE = 150
#: blockTime is the cluster's estimate; our clock and its may differ this much.
CLOCK_MARGIN = timedelta(minutes=5)
_PAGE = 1000  # getSignaturesForAddress's own maximum


@dataclass(frozen=True)
class Scan:
    """What one bounded look through the history found.

    ``signatures`` (signer → signature, every required signer) and ``slot`` when the
    transaction landed; otherwise ``done`` says whether the history was read down to the
    lower bound (it did not land) or the budget ran out first (``cursor``: resume there).
    """

    signatures: dict[str, str] | None = None
    slot: int | None = None
    done: bool = True
    cursor: str | None = None
    examined: int = 0

    @property
    def landed(self) -> bool:
        return self.signatures is not None


def scan_address(tx: Transaction) -> Pubkey:
    """The address whose history is read: the leased nonce account for DURABLE_NONCE (only
    transactions leased to it touch it, so its history is short), else the fee payer."""
    if tx.lifetime == MessageLifetime.DURABLE_NONCE and tx.nonce_account:
        return Pubkey.from_string(tx.nonce_account)
    return Pubkey.from_string(tx.fee_payer)


def _lower_bounds(tx: Transaction) -> tuple[int | None, int]:
    slot_floor = None
    if tx.lifetime == MessageLifetime.RECENT_BLOCKHASH and tx.last_valid_block_height is not None:
        slot_floor = tx.last_valid_block_height - MAX_PROCESSING_AGE
    # Recorded before anyone outside the service saw the message: it cannot have landed
    # before that.
    return slot_floor, int((tx.txn_timestamp - CLOCK_MARGIN).timestamp())


def _signatures_if_same(raw: bytes, message: bytes, signers: list[str]) -> dict[str, str] | None:
    try:
        landed = VersionedTransaction.from_bytes(raw)
    except ValueError:
        return None
    count = len(landed.signatures)
    # Wire form: shortvec(count) (one byte below 128), the signatures, then the message.
    if count != len(signers) or len(raw) != 1 + 64 * count + len(message) or raw[1 + 64 * count:] != message:
        return None
    return {signer: str(sig) for signer, sig in zip(signers, landed.signatures)}


def find_landed(tx: Transaction, rpc: ChainRpc, *, budget: int, resume_before: str | None = None) -> Scan:
    """Look for ``tx`` in the history of ``scan_address(tx)``, examining at most ``budget``
    signatures (each costs a getTransaction), newer than ``resume_before`` excluded."""
    budget = max(1, budget)  # a scan that may examine nothing would never finish
    address = scan_address(tx)
    message = bytes(tx.message)
    slot_floor, time_floor = _lower_bounds(tx)
    before = resume_before
    examined = 0
    while examined < budget:
        limit = min(_PAGE, budget - examined)
        page = rpc.signatures_for_address(address, before=Signature.from_string(before) if before else None, limit=limit)
        for entry in page:
            if (slot_floor is not None and entry.slot < slot_floor) or (entry.block_time is not None and entry.block_time < time_floor):
                return Scan(done=True, examined=examined)
            examined += 1
            before = str(entry.signature)
            raw = rpc.raw_transaction(entry.signature)
            if raw is None:
                # Listed but not served (a node pruning its ledger between the calls).
                logger.warning("history lists %s but the node does not serve it", entry.signature)
                continue
            signatures = _signatures_if_same(raw, message, list(tx.required_signers))
            if signatures is not None:
                return Scan(signatures=signatures, slot=entry.slot, examined=examined)
        if len(page) < limit:
            return Scan(done=True, examined=examined)  # the whole history was read
    return Scan(done=False, cursor=before, examined=examined)
