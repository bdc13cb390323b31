"""Update Oracle Data Source Definition on the local node: a new job is recorded on chain
(SetJobHash) and evaluated once that confirms; the schedule, rating provider and status
change at once; and onboarding an existing feed with alreadyOnchain."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django_celery_beat.models import PeriodicTask
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from conftest import assert_error
from marketdata.jobs import job_hash
from marketdata.models import OnchainDataSource
from marketdata.tests.jobkit import definition, source
from programs.price_feed import client
from programs.tests.feedkit import node_clock
from tests.workers import paused_workers, wait_for
from transactions.models import Transaction
from transactions.tests.chainkit import funded, send

from .kit import PRICE_FEED, PriceServer, call, created, details, feed_raw, mantissa, parsed, refreshed, world

pytestmark = pytest.mark.chain


def single(server: PriceServer) -> str:
    return definition(*source(server.url("/price"))["tasks"])


@pytest.mark.django_db(transaction=True)
def test_a_new_job_is_recorded_on_chain_and_evaluated_once_it_confirms(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("10") as a, PriceServer("20") as b:
        data_source = created(w.create(api, single(a), refresh=120))
        lookup = {"onchainDataSource": data_source}
        assert refreshed(api, data_source)["evaluation"]["value"] == Decimal("10")

        new_job = single(b)
        with paused_workers():  # the SetJobHash waits: the feed is changing
            answer = call(api, "patch", "", {**lookup, "partnerOracleDetails": {"jobDefinition": new_job, "refreshIntervalSeconds": 30},
                                             "dataDetails": {"ratingProvider": "NEW"}})
            assert answer.status_code == 200, answer.json()
            assert answer.json()["updatedOnchainDataSource"] == data_source and answer.json()["svmTransaction"]["status"] == "SIGNED"
            shown = details(api, data_source)
            assert shown["partnerOracleDetails"]["jobDefinition"] != new_job  # the old job until the chain states the new one
            assert shown["dataDetails"]["ratingProvider"] == "NEW" and shown["partnerOracleDetails"]["refreshIntervalSeconds"] == 30  # at once
            assert_error(call(api, "patch", "/refresh", lookup), 409, "OPERATION_IN_PROGRESS", "itemData.onchainDataSource")
        wait_for(lambda: OnchainDataSource.unscoped.get(offchain_id=data_source["offchainId"]).job_hash == job_hash(new_job).hex(), timeout=30, what="SetJobHash applied")
        assert feed_raw(chain, data_source["onchainId"])["job_hash"] == job_hash(new_job)
        shown = details(api, data_source)
        assert shown["partnerOracleDetails"]["jobDefinition"] == new_job and shown["onchainValue"]["jobHash"] == job_hash(new_job).hex()
        assert refreshed(api, data_source)["evaluation"]["value"] == Decimal("20")

        # The same job written otherwise (spacing, member order): the same hash, no transaction.
        respaced = json.dumps(json.loads(new_job), indent=2)
        same = call(api, "patch", "", {**lookup, "partnerOracleDetails": {"jobDefinition": respaced}})
        assert same.status_code == 200 and same.json()["svmTransaction"] is None, same.json()
        assert details(api, data_source)["partnerOracleDetails"]["jobDefinition"] == respaced

        # No schedule: refreshed on demand only (the periodic task is kept, switched off).
        off = call(api, "patch", "", {**lookup, "partnerOracleDetails": {"refreshIntervalSeconds": None}})
        assert off.status_code == 200, off.json()
        record = OnchainDataSource.unscoped.get(offchain_id=data_source["offchainId"])
        assert not PeriodicTask.objects.get(pk=record.schedule_id).enabled and details(api, data_source)["partnerOracleDetails"]["refreshIntervalSeconds"] is None


@pytest.mark.django_db(transaction=True)
def test_an_existing_feed_is_onboarded_after_reading_it_from_the_chain(api, chain, celery_worker_process):
    w = world(api, chain)
    with PriceServer("3.5") as prices:
        job = single(prices)
        payer, feed = funded(chain, 10**9), Keypair()
        lamports = chain.get_minimum_balance_for_rent_exemption(client.FEED_SIZE).value
        mint = Pubkey.from_string(w.instrument["onchainId"])
        send(chain, payer, [client.create_feed_account(PRICE_FEED, payer=payer.pubkey(), feed=feed.pubkey(), lamports=lamports),
                            client.initialize(PRICE_FEED, feed=feed.pubkey(), authority=w.authority_key.pubkey(), mint=mint, exponent=-4, max_staleness=600,
                                              job_hash=job_hash(job))], [feed, w.authority_key])
        _, now = node_clock(chain)
        send(chain, payer, [client.update(PRICE_FEED, feed=feed.pubkey(), authority=w.authority_key.pubkey(), round=4, value=31_000, observed_at=now)], [w.authority_key])
        existing = {"onchainId": str(feed.pubkey()), "offPlatform": True}
        item = {**w.item(job), "alreadyOnchain": True, "existingOnchainDataSourceAccount": existing}
        item["oracleDataSourceAuthority"] = None  # the feed's authority: an account of the organization

        before = OnchainDataSource.unscoped.count(), Transaction.unscoped.count()
        other_job = single(PriceServer("1"))
        for changes, code, field in [
            ({"partnerOracleDetails": {**item["partnerOracleDetails"], "jobDefinition": other_job}}, "JOB_HASH_MISMATCH", "itemData.partnerOracleDetails.jobDefinition"),
            ({"partnerOracleDetails": {**item["partnerOracleDetails"], "exponent": -8}}, "FEED_MISMATCH", "itemData.partnerOracleDetails.exponent"),
            ({"oracleDataSourceAuthority": w.funder}, "AUTHORITY_MISMATCH", "itemData.oracleDataSourceAuthority"),
            ({"existingOnchainDataSourceAccount": {"onchainId": str(payer.pubkey()), "offPlatform": True}}, "NOT_A_FEED", "itemData.existingOnchainDataSourceAccount"),
        ]:
            assert_error(call(api, "post", "", {**item, **changes}), 400, code, field)
        assert (OnchainDataSource.unscoped.count(), Transaction.unscoped.count()) == before

        answer = call(api, "post", "", item)
        assert answer.status_code == 200, answer.json()
        body = parsed(answer)
        assert body == {"newOnchainDataSource": {"onchainId": str(feed.pubkey()), "offchainId": body["newOnchainDataSource"]["offchainId"]}, "svmTransaction": None}
        assert Transaction.unscoped.count() == before[1]
        data_source = body["newOnchainDataSource"]
        shown = details(api, data_source)
        assert shown["status"] == "ACTIVE" and shown["wasAlreadyOnchain"] and shown["partnerOracleDetails"]["exponent"] == -4
        assert shown["partnerOracleDetails"]["maxStalenessSeconds"] == 600 and shown["onchainValue"]["value"] == Decimal("3.1") and shown["onchainValue"]["round"] == 4
        assert shown["oracleDataSourceAuthority"] == {"onchainId": w.authority_address, "offchainId": w.authority["offchainId"]}
        # The service refreshes it from the feed's next round on.
        evaluation = refreshed(api, data_source)["evaluation"]
        assert evaluation["status"] == "CONFIRMED" and evaluation["round"] == 5 and evaluation["value"] == Decimal("3.5"), evaluation
        raw = feed_raw(chain, data_source["onchainId"])
        assert (raw["round"], raw["value"]) == (5, mantissa("3.5", -4))
        # A second source of the instrument while this one is active: 409.
        assert_error(call(api, "post", "", item), 409, "DATA_SOURCE_EXISTS")
