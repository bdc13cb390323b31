"""Helpers for the market data tests on the local node: price servers (the webhook tests'
local server kit), the parties and the instrument, the endpoints, and the feed account
read back with an unmodified solana-py client and decoded here with ``struct`` from the
layout docs/programs.md publishes (not with the service's decoder)."""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from decimal import Decimal

from solana.rpc.api import Client
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from marketdata.tests.jobkit import definition, median, source
from positions.tests.kit import instrument, wallet
from transactions.tests.chainkit import wait
from webhooks.tests.webhookkit import JsonSource
from vaults.tests.kit import address_of

BASE = "/api/v1/market-data/onchain-data-source"
PRICE_FEED = Pubkey.from_string("PriceFeed1111111111111111111111111111111111")
DONE = ("CONFIRMED", "FINALIZED")

# docs/programs.md, "price_feed": the header (then 8 ring entries of <QqqQ).
HEADER = struct.Struct("<BBBBiQqqQqq32s32s32s")
FIELDS = ("kind", "version", "ring_len", "ring_head", "exponent", "round", "value", "observed_at", "slot", "unix_time", "max_staleness", "authority", "mint", "job_hash")


def feed_raw(chain: Client, address: str) -> dict:
    """The feed as any client reads it: owned by the program, 408 bytes, the header fields."""
    info = chain.get_account_info(Pubkey.from_string(address)).value
    assert info is not None and info.owner == PRICE_FEED, info
    data = bytes(info.data)
    assert len(data) == 408
    return dict(zip(FIELDS, HEADER.unpack_from(data, 0)))


class PriceServer(JsonSource):
    """A price API answering ``{"price": "<price>"}`` (a string, as many APIs quote).
    ``stop()`` takes it down as a host going down does: the listener closed and every open
    connection dropped (the worker keeps connections alive between evaluations)."""

    def __init__(self, price: str, **options):
        super().__init__(document={"price": price}, **options)
        self.connections: set = set()

    def _handler(self):
        outer = self

        class Tracked(super()._handler()):
            def setup(self):
                super().setup()
                with outer.lock:
                    outer.connections.add(self.connection)

            def finish(self):
                with outer.lock:
                    outer.connections.discard(self.connection)
                super().finish()

        return Tracked

    def stop(self) -> None:
        super().stop()
        with self.lock:
            live = list(self.connections)
        for connection in live:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def quote(self, price: str) -> None:
        with self.lock:
            self.body = json.dumps({"price": price}).encode()


def median_job(*servers: PriceServer, **options) -> str:
    """The median of the servers' prices ($.price), with the medianTask's ``options``."""
    return definition(median(*(source(s.url("/price")) for s in servers), **options))


def parsed(response) -> dict:
    """A JSON answer with its numbers as Decimal (the service writes every digit)."""
    return json.loads(response.content, parse_float=Decimal)


def call(api, method: str, path: str, item: dict | None = None, *, wait: bool = False, request_id=None, **envelope):
    body = {**({"itemData": item} if item is not None else {}), **envelope}
    return api.call(method, BASE + path + ("?wait=confirmed" if wait else ""), body, request_id=request_id)


@dataclass
class World:
    """An instrument to price, the feed's authority (a managed account whose key the test
    knows) and a funder paying the feed's rent."""

    instrument: dict
    authority: dict
    authority_key: Keypair
    authority_address: str
    funder: dict

    def item(self, job: str, *, refresh: int | None = None, **details) -> dict:
        return {"defiProtocol": "PARTNER_ORACLE", "partnerOracleDetails": {"kind": "QUOTES", "jobDefinition": job, "refreshIntervalSeconds": refresh, **details},
                "financialInstrument": self.instrument, "oracleDataSourceAuthority": self.authority, "dataDetails": {"kind": "PRICE", "ratingProvider": "TEST"}}

    def create(self, api, job: str, *, wait: bool = True, request_id=None, **details):
        return call(api, "post", "", self.item(job, **details), wait=wait, request_id=request_id, svmTransactionConfig={"feePayer": self.funder})


def world(api, chain: Client) -> World:
    authority_key = Keypair()
    authority = wallet(api, authority_key)
    funder = wallet(api)
    wait(chain, chain.request_airdrop(Pubkey.from_string(address_of(api, funder)), 2 * 10**9).value)
    priced = instrument(api, authority=funder, kind="CORPORATE_BOND", decimals=0)
    return World(priced, authority, authority_key, str(authority_key.pubkey()), funder)


def created(response) -> dict:
    """The new data source of a Create answered 200 whose transaction confirmed."""
    assert response.status_code == 200, (response.status_code, response.json())
    body = parsed(response)
    assert set(body) == {"newOnchainDataSource", "svmTransaction"}, body
    assert body["svmTransaction"]["status"] in DONE, body
    return body["newOnchainDataSource"]


def refreshed(api, data_source: dict) -> dict:
    """Refresh with ?wait=confirmed: the answer once the worker evaluated (and sent)."""
    response = call(api, "patch", "/refresh", {"onchainDataSource": data_source}, wait=True)
    assert response.status_code == 200, response.json()
    body = parsed(response)
    assert body["refreshedOnchainDataSource"] == data_source, body
    return body


def details(api, data_source: dict) -> dict:
    response = call(api, "post", "/single", {"onchainDataSource": data_source})
    assert response.status_code == 200, response.json()
    return parsed(response)


def mantissa(price: str, exponent: int = -8) -> int:
    return int(Decimal(price).scaleb(-exponent))
