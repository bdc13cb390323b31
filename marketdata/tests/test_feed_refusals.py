"""The feed's own rules on a data source the service created: stale, out-of-order and
wrongly signed updates sent directly with solana-py land and fail on chain with the
price_feed program's error; the service's refreshes meet the same program (a feed handed
to another authority is REJECTED, nothing sent; rounds used elsewhere are caught up)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from solana.rpc.types import TxOpts
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction as SolanaTransaction
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError

from marketdata.tests.jobkit import definition, source
from programs.price_feed import client
from programs.tests.feedkit import node_clock
from transactions.tests.chainkit import funded, send, wait

from .kit import PRICE_FEED, PriceServer, created, feed_raw, mantissa, refreshed, world

pytestmark = pytest.mark.chain

# docs/programs.md, "price_feed": Custom(code) of the program's errors.
AUTHORITY_MISMATCH, OUT_OF_ORDER, STALE = 7312, 7317, 7318


def _fails_on_chain(chain, payer: Keypair, instruction, signers) -> int:
    """Send without preflight, so the transaction lands: the program's error code."""
    message = Message([instruction], payer.pubkey())
    tx = SolanaTransaction([payer, *signers], message, chain.get_latest_blockhash().value.blockhash)
    status = wait(chain, chain.send_transaction(tx, opts=TxOpts(skip_preflight=True)).value)
    assert isinstance(status.err, TransactionErrorInstructionError) and isinstance(status.err.err, InstructionErrorCustom), status
    return status.err.err.code


def _update(feed: str, authority: Pubkey, round: int, value: int, observed_at: int):
    return client.update(PRICE_FEED, feed=Pubkey.from_string(feed), authority=authority, round=round, value=value, observed_at=observed_at)


@pytest.mark.django_db(transaction=True)
def test_stale_out_of_order_and_wrongly_signed_updates_fail_on_chain_with_the_programs_error(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("5") as prices:
        data_source = created(w.create(api, definition(*source(prices.url("/price"))["tasks"])))
        feed, payer = data_source["onchainId"], funded(chain, 10**9)
        _, now = node_clock(chain)
        # An observation older than the node's clock minus the feed's max staleness (300 s).
        assert _fails_on_chain(chain, payer, _update(feed, w.authority_key.pubkey(), 1, 7, now - 400), [w.authority_key]) == STALE
        assert feed_raw(chain, feed)["round"] == 0

        assert refreshed(api, data_source)["evaluation"]["round"] == 1
        before = feed_raw(chain, feed)
        _, now = node_clock(chain)
        assert _fails_on_chain(chain, payer, _update(feed, w.authority_key.pubkey(), 1, 7, now), [w.authority_key]) == OUT_OF_ORDER  # round 1 again
        intruder = Keypair()
        assert _fails_on_chain(chain, payer, _update(feed, intruder.pubkey(), 2, 7, now), [intruder]) == AUTHORITY_MISMATCH
        assert [client.error_name(c) for c in (OUT_OF_ORDER, STALE, AUTHORITY_MISMATCH)] == ["OutOfOrder", "Stale", "AuthorityMismatch"]
        assert feed_raw(chain, feed) == before

        # The feed handed to another authority (directly, by its authority): the service's
        # next update is refused by the program in simulation; nothing is sent.
        send(chain, payer, [client.set_authority(PRICE_FEED, feed=Pubkey.from_string(feed), authority=w.authority_key.pubkey(), new_authority=intruder.pubkey())],
             [w.authority_key])
        body = refreshed(api, data_source)
        evaluation = body["evaluation"]
        assert evaluation["status"] == "REJECTED" and body["svmTransaction"] is None and evaluation["transaction"] is None, evaluation
        assert any("AuthorityMismatch" in e for e in evaluation["errors"]), evaluation["errors"]
        after = feed_raw(chain, feed)
        assert (after["round"], after["value"]) == (before["round"], before["value"])


@pytest.mark.django_db(transaction=True)
def test_rounds_only_grow_even_when_the_authority_updates_the_feed_elsewhere(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("5") as prices:
        data_source = created(w.create(api, definition(*source(prices.url("/price"))["tasks"])))
        assert refreshed(api, data_source)["evaluation"]["round"] == 1
        _, now = node_clock(chain)
        # Not older than the service's own observation (its wall clock may run ahead of the
        # node's on a loaded machine: the program would refuse it as OutOfOrder).
        observed = max(now, feed_raw(chain, data_source["onchainId"])["observed_at"])
        send(chain, funded(chain, 10**9), [_update(data_source["onchainId"], w.authority_key.pubkey(), 10, mantissa("6"), observed)], [w.authority_key])

        # The service's round 2 is out of order now: refused before sending, and the record
        # catches up with the chain, so the next refresh goes through with round 11.
        stale = refreshed(api, data_source)["evaluation"]
        assert stale["status"] == "REJECTED" and stale["round"] == 2 and any("OutOfOrder" in e for e in stale["errors"]), stale
        assert feed_raw(chain, data_source["onchainId"])["round"] == 10
        prices.quote("7.25")
        fresh = refreshed(api, data_source)["evaluation"]
        assert fresh["status"] == "CONFIRMED" and fresh["round"] == 11 and fresh["value"] == Decimal("7.25"), fresh
        assert (feed_raw(chain, data_source["onchainId"])["round"], feed_raw(chain, data_source["onchainId"])["value"]) == (11, mantissa("7.25"))
