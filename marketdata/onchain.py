"""The price_feed program as the market data area uses it: its id on the cluster, a feed
as the chain holds it, and which request field each of its errors is about
(programs/price_feed/client.py encodes the instructions; docs/programs.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

from solders.pubkey import Pubkey

from programs.price_feed import client
from chain.rpc import rpc_for
from transactions.programs import require_program_id

PROGRAM = client.PROGRAM_NAME

#: The command field a feed program error is about (docs/marketdata.md, "Errors"): the 400
#: PROGRAM_ERROR names it (the door maps it to the request's); other errors concern the
#: whole request (field null).
ERROR_FIELDS = {
    "AuthorityMismatch": "oracle_data_source_authority", "AuthorityNotSigner": "oracle_data_source_authority",
    "MintInvalid": "financial_instrument", "InvalidExponent": "partner_oracle_details.exponent",
    "InvalidMaxStaleness": "partner_oracle_details.max_staleness_seconds",
    **dict.fromkeys(("FeedNotFound", "FeedWrongOwner", "FeedWrongSize", "FeedInvalid", "OutOfOrder", "Stale", "FromFuture"), "onchain_data_source"),
}


def program_id(cluster: str) -> Pubkey:
    """The price_feed program's id on ``cluster`` (400 PROGRAM_NOT_DEPLOYED without one)."""
    return require_program_id(cluster, PROGRAM)


def decode(account, program: str) -> client.FeedState | None:
    """The feed in ``account`` (None when absent, not the program's, or not a feed)."""
    if account is None or str(account.owner) != program:
        return None
    try:
        return client.decode_feed(bytes(account.data))
    except ValueError:
        return None


def read_feed(cluster: str, address: str, program: str) -> tuple[client.FeedState | None, int | None]:
    """The feed at ``address`` as the cluster holds it now, and the slot of that read."""
    read = rpc_for(cluster).read_accounts([address])
    return decode(read.accounts[address], program), read.slot


def at(unix_seconds: int) -> datetime | None:
    """A feed's unix time as an aware UTC datetime (None for 0: never set)."""
    return datetime.fromtimestamp(unix_seconds, tz=timezone.utc) if unix_seconds else None


def price(mantissa: int | Decimal, exponent: int) -> Decimal:
    """``mantissa × 10^exponent``, exactly."""
    return Decimal(int(mantissa)).scaleb(exponent)


def feed_record_fields(state: client.FeedState, slot: int | None) -> dict:
    """The data source's ``onchain_*`` fields for a feed read at ``slot``."""
    return {
        "onchain_round": state.round, "onchain_value": Decimal(state.value), "onchain_observed_at": at(state.observed_at),
        "onchain_updated_at": at(state.unix_time), "onchain_slot": state.slot or None, "onchain_job_hash": state.job_hash.hex(),
        "synced_slot": slot,
    }
