"""Python side of the price feed program: instruction encoders, the feed decoder and error
names, all from abi.py (the definition the program's header is generated from). Pure
functions: nothing here talks to a cluster.

The program's id on a cluster: ``transactions.programs.require_program_id(cluster,
PROGRAM_NAME)`` (configured, or recorded by deploy_programs); on CHAIN_LOCALNET it is the
fixed ``LOCALNET_PROGRAM_ID`` the embedded node loads at genesis.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account

import programs

from . import abi

PROGRAM_NAME = "price_feed"
LOCALNET_PROGRAM_ID = Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS[PROGRAM_NAME])
FEED_SIZE = abi.FEED_SIZE
ERROR_CODES = {e.name: e.code for e in abi.ERRORS}


def job_hash(definition: str | bytes) -> bytes:
    """SHA-256 of raw bytes or text (UTF-8). The program keeps ``job_hash`` as 32 opaque
    bytes; the service records ``marketdata.jobs.job_hash`` there, the SHA-256 of the
    definition's canonical JSON (docs/marketdata.md), so spacing and member order do not
    change it. This one hashes text as given (tests, feeds of other publishers)."""
    return hashlib.sha256(definition.encode() if isinstance(definition, str) else definition).digest()


def _instruction(program: Pubkey, name: str, keys: dict[str, Pubkey], **args) -> Instruction:
    spec = abi.ABI.instruction(name)
    metas = [AccountMeta(keys[a.name], is_signer=a.signer, is_writable=a.writable) for a in spec.accounts]
    return Instruction(program, spec.encode(**args), metas)


def create_feed_account(program: Pubkey, *, payer: Pubkey, feed: Pubkey, lamports: int) -> Instruction:
    """System CreateAccount of a feed: FEED_SIZE bytes owned by ``program``; ``lamports`` is
    the cluster's rent-exempt minimum for FEED_SIZE (getMinimumBalanceForRentExemption).
    The feed's keypair signs; send ``initialize`` in the same transaction."""
    return create_account(CreateAccountParams(from_pubkey=payer, to_pubkey=feed, lamports=lamports, space=FEED_SIZE, owner=program))


def initialize(program: Pubkey, *, feed: Pubkey, authority: Pubkey, mint: Pubkey, exponent: int, max_staleness: int, job_hash: bytes) -> Instruction:
    keys = {"feed": feed, "authority": authority, "mint": mint}
    return _instruction(program, "Initialize", keys, exponent=exponent, max_staleness=max_staleness, job_hash=job_hash)


def update(program: Pubkey, *, feed: Pubkey, authority: Pubkey, round: int, value: int, observed_at: int) -> Instruction:
    keys = {"feed": feed, "authority": authority}
    return _instruction(program, "Update", keys, round=round, value=value, observed_at=observed_at)


def set_authority(program: Pubkey, *, feed: Pubkey, authority: Pubkey, new_authority: Pubkey) -> Instruction:
    return _instruction(program, "SetAuthority", {"feed": feed, "authority": authority}, new_authority=bytes(new_authority))


def set_job_hash(program: Pubkey, *, feed: Pubkey, authority: Pubkey, job_hash: bytes) -> Instruction:
    return _instruction(program, "SetJobHash", {"feed": feed, "authority": authority}, job_hash=job_hash)


def close(program: Pubkey, *, feed: Pubkey, authority: Pubkey, recipient: Pubkey) -> Instruction:
    return _instruction(program, "Close", {"feed": feed, "authority": authority, "recipient": recipient})


@dataclass(frozen=True)
class RingEntry:
    round: int
    value: int
    observed_at: int
    slot: int


@dataclass(frozen=True)
class FeedState:
    """A decoded feed. ``ring``: the accepted readings kept, newest first."""

    exponent: int
    round: int
    value: int
    observed_at: int
    slot: int
    unix_time: int
    max_staleness: int
    authority: Pubkey
    mint: Pubkey
    job_hash: bytes
    ring_len: int
    ring_head: int
    ring: tuple[RingEntry, ...]

    @property
    def price(self) -> Decimal:
        """``value × 10^exponent``, exactly."""
        return Decimal(self.value).scaleb(self.exponent)

    def fresh(self, *, now: int, max_age: int) -> bool:
        """The consumer's rule: a reading exists and ``now - observed_at <= max_age``
        (``now``: the cluster clock's unix_timestamp)."""
        return self.round > 0 and now - self.observed_at <= max_age


def decode_feed(data: bytes) -> FeedState:
    """The feed in an account's data; ValueError when it is not a feed of this layout (the
    caller checks the account's owner is the program)."""
    if len(data) != FEED_SIZE:
        raise ValueError(f"a feed account holds {FEED_SIZE} bytes, not {len(data)}")
    head = abi.FEED_STATE.unpack(data)
    if head["kind"] != abi.FEED_KIND or head["version"] != abi.LAYOUT_VERSION:
        raise ValueError("not a price feed account")
    if head["ring_len"] > abi.RING_CAPACITY or head["ring_head"] >= abi.RING_CAPACITY:
        raise ValueError("price feed ring out of range")
    start, size = abi.FEED_STATE.size, abi.RING_ENTRY.size
    ring = tuple(
        RingEntry(**abi.RING_ENTRY.unpack(data, start + size * ((head["ring_head"] - i) % abi.RING_CAPACITY)))
        for i in range(head["ring_len"])
    )
    return FeedState(
        exponent=head["exponent"], round=head["round"], value=head["value"], observed_at=head["observed_at"],
        slot=head["slot"], unix_time=head["unix_time"], max_staleness=head["max_staleness"],
        authority=Pubkey.from_bytes(head["authority"]), mint=Pubkey.from_bytes(head["mint"]), job_hash=head["job_hash"],
        ring_len=head["ring_len"], ring_head=head["ring_head"], ring=ring,
    )


def error_name(code: int) -> str | None:
    """The program's name for Custom(code), or None when the code is not the feed's."""
    error = abi.ABI.error_by_code(code)
    return error.name if error else None
