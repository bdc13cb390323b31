"""Onchain data sources through the API on the local node with a real worker (genesis
price_feed program): a job over local price servers, its median written to the feed, and
the feed read back by an independent client (solana-py + struct)."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

import pytest
from solders.pubkey import Pubkey

from marketdata.models import DataSourceEvaluation, EvaluationStatus, OnchainDataSource
from transactions.models import Transaction

from .kit import PriceServer, created, details, feed_raw, mantissa, median_job, refreshed, world

pytestmark = pytest.mark.chain


def canonical_hash(job: str) -> bytes:
    """docs/marketdata.md: SHA-256 of the definition's canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(json.loads(job), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).digest()


@pytest.mark.django_db(transaction=True)
def test_the_median_of_two_price_servers_lands_in_the_feed_any_client_reads(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("100.00") as a, PriceServer("102.50") as b:
        job = median_job(a, b)
        source = created(w.create(api, job))
        raw = feed_raw(chain, source["onchainId"])
        assert (raw["kind"], raw["version"], raw["exponent"], raw["max_staleness"], raw["round"], raw["value"]) == (3, 1, -8, 300, 0, 0)
        assert raw["mint"] == bytes(Pubkey.from_string(w.instrument["onchainId"])) and raw["authority"] == bytes(w.authority_key.pubkey()) and raw["job_hash"] == canonical_hash(job)
        shown = details(api, source)
        assert shown["status"] == "ACTIVE" and shown["onchainValue"]["round"] == 0 and shown["onchainValue"]["value"] is None and shown["lastEvaluation"] is None
        assert shown["oracleDataSourceAuthority"] == {"onchainId": w.authority_address, "offchainId": w.authority["offchainId"]}
        assert shown["partnerOracleDetails"]["jobHash"] == canonical_hash(job).hex() and shown["partnerOracleDetails"]["refreshIntervalSeconds"] is None

        body = refreshed(api, source)
        evaluation = body["evaluation"]
        assert evaluation["status"] == "CONFIRMED" and evaluation["trigger"] == "API", evaluation
        assert evaluation["value"] == Decimal("101.25") and evaluation["mantissa"] == mantissa("101.25") and evaluation["round"] == 1
        assert sorted(s["value"] for s in evaluation["sources"]) == [Decimal("100.00"), Decimal("102.50")]
        assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED") and evaluation["transaction"]["onchainId"] == body["svmTransaction"]["onchainId"]

        raw = feed_raw(chain, source["onchainId"])
        assert (raw["round"], raw["value"]) == (1, 10_125_000_000) and raw["observed_at"] > 0 and raw["slot"] > 0
        assert raw["ring_len"] == 1
        shown = details(api, source)
        feed = shown["onchainValue"]
        assert feed["readFrom"] == "CHAIN" and feed["value"] == Decimal("101.25") and feed["round"] == 1 and feed["mantissa"] == raw["value"]
        assert feed["recent"][0]["round"] == 1 and shown["lastEvaluation"]["offchainId"] == evaluation["offchainId"]
        assert shown["lastUpdateAt"] is not None
        # The record's copy follows the chain once the update confirmed.
        record = OnchainDataSource.unscoped.get(offchain_id=source["offchainId"])
        assert (record.onchain_round, int(record.onchain_value), record.last_round, record.pending_transaction_id) == (1, 10_125_000_000, 1, None)


@pytest.mark.django_db(transaction=True)
def test_a_source_down_or_an_outlier_is_handled_as_the_job_says_and_a_failed_evaluation_writes_nothing(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("100") as a, PriceServer("101") as b, PriceServer("150") as c:
        # The median of those answering, two at least; a price more than 5 % from the median is dropped.
        source = created(w.create(api, median_job(a, b, c, minSuccessfulRequired=2, maxRangePercent="5")))

        outlier = refreshed(api, source)["evaluation"]
        assert outlier["status"] == "CONFIRMED" and outlier["value"] == Decimal("100.5") and outlier["round"] == 1, outlier
        assert any("outlier" in e.lower() for e in outlier["errors"]), outlier["errors"]
        assert feed_raw(chain, source["onchainId"])["value"] == mantissa("100.5")

        c.stop()  # down: the two others still make the median
        down = refreshed(api, source)["evaluation"]
        assert down["status"] == "CONFIRMED" and down["value"] == Decimal("100.5") and down["round"] == 2, down
        failed_source = next(s for s in down["sources"] if s["url"].startswith(c.url()))
        assert failed_source["value"] is None and failed_source["error"]

        b.stop()  # one left: fewer than minSuccessfulRequired, no value
        before = feed_raw(chain, source["onchainId"])
        failed = refreshed(api, source)
        evaluation = failed["evaluation"]
        assert evaluation["status"] == "FAILED" and evaluation["value"] is None and evaluation["round"] is None and evaluation["transaction"] is None, evaluation
        assert failed["svmTransaction"] is None and evaluation["errors"]
        assert feed_raw(chain, source["onchainId"]) == before  # nothing written
        assert details(api, source)["lastEvaluation"]["status"] == "FAILED"

        b.start()  # back: the next refresh writes again, the round after the last one written
        back = refreshed(api, source)["evaluation"]
        assert back["status"] == "CONFIRMED" and back["round"] == 3 and back["value"] == Decimal("100.5"), back
    rounds = list(DataSourceEvaluation.unscoped.filter(data_source__offchain_id=source["offchainId"], status=EvaluationStatus.CONFIRMED).order_by("pk").values_list("round", flat=True))
    assert rounds == [1, 2, 3]
    assert Transaction.unscoped.filter(operation="marketdata.update").count() == 3
