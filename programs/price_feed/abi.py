"""ABI of the price feed program (docs/programs.md, "price_feed"): the one definition of its
account, instructions and errors; ``abi.h`` is generated from it.

A feed is a fresh keypair account (not a PDA) of ``FEED_SIZE`` bytes owned by the program:
created with System ``CreateAccount`` and initialized in the same transaction (the feed
signs both, so nobody can initialize someone else's account between the two). It holds the
last accepted reading of one instrument (``mint``) — ``value × 10^exponent``, observed at
``observed_at`` (unix seconds, from the updater), accepted at the cluster's ``slot`` and
``unix_time`` — and the last ``RING_CAPACITY`` accepted readings, newest at ``ring_head``.

Only the recorded ``authority`` updates it. An update must carry a round above the last one
and an observation no older than the last one (``OutOfOrder``), no older than the cluster
clock minus ``max_staleness`` (``Stale``) and no later than the clock plus
``MAX_FUTURE_SECONDS`` (``FromFuture``). A consumer (the lending program) calls a reading
fresh when the account is owned by this program, has ``kind`` and ``version`` below, and
``Clock.unix_timestamp - observed_at`` is at most its own maximum age.
"""

from __future__ import annotations

from programs.toolchain.abi import Account, Error, Instruction, ProgramAbi, Struct

FEED_KIND = 3
LAYOUT_VERSION = 1
#: Accepted readings kept in the account (newest at ``ring_head``).
RING_CAPACITY = 8
#: An observation may be at most this many seconds ahead of the cluster clock (clocks of
#: the updater and the cluster drift; more than this is a wrong timestamp).
MAX_FUTURE_SECONDS = 60
#: Bounds of ``exponent`` (a price is ``value × 10^exponent``): -MAX_EXPONENT..MAX_EXPONENT.
MAX_EXPONENT = 18
MIN_EXPONENT = -MAX_EXPONENT
#: Bounds of ``max_staleness`` in seconds (1 s to 366 days).
MAX_STALENESS_LIMIT = 366 * 86_400
ERROR_BASE = 7300

FEED_STATE = Struct("FeedState", [
    ("kind", "u8"),
    ("version", "u8"),
    ("ring_len", "u8"),
    ("ring_head", "u8"),
    ("exponent", "i32"),
    ("round", "u64"),
    ("value", "i64"),
    ("observed_at", "i64"),
    ("slot", "u64"),
    ("unix_time", "i64"),
    ("max_staleness", "i64"),
    ("authority", "pubkey"),
    ("mint", "pubkey"),
    ("job_hash", "u8[32]"),
], doc="Feed header; RING_CAPACITY FeedRingEntry (32 bytes each) follow it, the newest at ring_head, the first ring_len accepted ones in use.")
RING_ENTRY = Struct("FeedRingEntry", [
    ("round", "u64"),
    ("value", "i64"),
    ("observed_at", "i64"),
    ("slot", "u64"),
], doc="One accepted reading in the ring.")
#: The feed account's size: the header, then the ring.
FEED_SIZE = FEED_STATE.size + RING_ENTRY.size * RING_CAPACITY

INSTRUCTIONS = [
    Instruction(
        "Initialize", 0,
        Struct("FeedInitializeArgs", [("tag", "u8"), ("_pad", "u8[3]"), ("exponent", "i32"), ("max_staleness", "i64"), ("job_hash", "u8[32]")]),
        (
            Account("feed", writable=True, signer=True, doc="a fresh account of FEED_SIZE bytes owned by the program (created with CreateAccount in the same transaction)"),
            Account("authority", signer=True, doc="recorded as the feed's authority (signs updates, SetAuthority, SetJobHash, Close)"),
            Account("mint", doc="the instrument's mint (SPL Token or Token-2022)"),
        ),
        doc="Records the exponent, the staleness bound, the job hash, the authority and the mint; no reading yet (round 0, empty ring).",
    ),
    Instruction(
        "Update", 1,
        Struct("FeedUpdateArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("round", "u64"), ("value", "i64"), ("observed_at", "i64")]),
        (
            Account("feed", writable=True),
            Account("authority", signer=True),
        ),
        doc="Accepts one reading: round above the last, observed_at not before the last, not stale, not from the future; records the cluster clock and pushes it onto the ring.",
    ),
    Instruction(
        "SetAuthority", 2,
        Struct("FeedSetAuthorityArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("new_authority", "pubkey")]),
        (
            Account("feed", writable=True),
            Account("authority", signer=True, doc="the current authority"),
        ),
        doc="Hands the feed to another authority.",
    ),
    Instruction(
        "SetJobHash", 3,
        Struct("FeedSetJobHashArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("job_hash", "u8[32]")]),
        (
            Account("feed", writable=True),
            Account("authority", signer=True),
        ),
        doc="Records the SHA-256 of a new job definition.",
    ),
    Instruction(
        "Close", 4,
        Struct("FeedCloseArgs", [("tag", "u8")]),
        (
            Account("feed", writable=True),
            Account("authority", signer=True),
            Account("recipient", writable=True, doc="receives the feed's lamports"),
        ),
        doc="Zeroes the feed's data and moves all its lamports to the recipient (the runtime deletes it at the end of the transaction).",
    ),
]

_ERRORS = [
    ("InvalidInstruction", "unknown instruction or data of the wrong length"),
    ("NotEnoughAccounts", "fewer accounts than the instruction lists"),
    ("TooManyAccounts", "more accounts than the program reads (16)"),
    ("FeedNotFound", "the feed account does not exist (never created, or closed)"),
    ("FeedWrongOwner", "the feed account is not owned by this program"),
    ("FeedWrongSize", f"the feed account's data is not {FEED_SIZE} bytes"),
    ("FeedNotWritable", "the feed account is not writable"),
    ("FeedNotSigner", "the feed account did not sign its initialization"),
    ("FeedAlreadyInitialized", "the feed account is already initialized"),
    ("FeedInvalid", "the feed account's data is not a feed (kind or version)"),
    ("AuthorityNotSigner", "the authority did not sign"),
    ("AuthorityMismatch", "the signer is not the feed's authority"),
    ("ZeroAuthority", "the new authority is the all-zero key"),
    ("MintInvalid", "the mint is not an initialized mint of SPL Token or Token-2022"),
    ("InvalidExponent", f"the exponent is outside {MIN_EXPONENT}..{MAX_EXPONENT}"),
    ("InvalidMaxStaleness", f"max_staleness is not within 1..{MAX_STALENESS_LIMIT} seconds"),
    ("OutOfOrder", "the round does not exceed the last one, or the observation is older than the last one"),
    ("Stale", "the observation is older than the cluster clock minus max_staleness"),
    ("FromFuture", f"the observation is more than {MAX_FUTURE_SECONDS} s after the cluster clock"),
    ("RecipientNotWritable", "the recipient is not writable"),
    ("InvalidRecipient", "the recipient is the feed itself"),
]
ERRORS = [Error(name, ERROR_BASE + i, message) for i, (name, message) in enumerate(_ERRORS, start=1)]

ABI = ProgramAbi(
    name="price_feed",
    prefix="FEED",
    doc="Price feeds: one instrument's last accepted readings, updated by its authority under the cluster clock.",
    constants={
        "KIND": FEED_KIND,
        "LAYOUT_VERSION": LAYOUT_VERSION,
        "RING_CAPACITY": RING_CAPACITY,
        "SIZE": FEED_SIZE,
        "MAX_FUTURE_SECONDS": MAX_FUTURE_SECONDS,
        "MAX_EXPONENT": MAX_EXPONENT,
        "MAX_STALENESS_LIMIT": MAX_STALENESS_LIMIT,
    },
    structs=[FEED_STATE, RING_ENTRY],
    instructions=INSTRUCTIONS,
    errors=ERRORS,
)
