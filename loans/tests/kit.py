"""API-driven helpers for the loan tests on a local node: wallets, instruments, positions and
strategies made through the real endpoints; price feeds made and updated directly with the
price_feed program's client (issue 16's market-data service publishes to the same accounts);
balances read with an unmodified solana-py client."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from solana.rpc.api import Client
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled
from programs.price_feed import client as feed_client
from transactions.tests.chainkit import funded, send, wait

BASE = "/api/v1/loans"
DONE = ("CONFIRMED", "FINALIZED")
PRICE_FEED = feed_client.LOCALNET_PROGRAM_ID
CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")
#: The terms most tests lend on: 10 % APY, 50 % loan-to-value, liquidation at 80 %, 30 days.
TERMS = {"apy": 1_000, "loanToValueRatio": 5_000, "liquidationRatio": 8_000, "duration": {"code": "DAYS", "unit": 30}}


def node_time(chain: Client) -> int:
    return struct.unpack_from("<QqQQq", bytes(chain.get_account_info(CLOCK).value.data))[4]


@dataclass
class Feed:
    """A price feed of the price_feed program, priced value × 10^-2 per whole token."""

    address: Pubkey
    authority: Keypair
    round: int = 0

    def set(self, chain: Client, payer: Keypair, value: int) -> None:
        self.round += 1
        send(chain, payer, [feed_client.update(PRICE_FEED, feed=self.address, authority=self.authority.pubkey(), round=self.round, value=value,
                                               observed_at=node_time(chain))], [self.authority])

    @property
    def lookup(self) -> dict:
        return {"onchainId": str(self.address)}


def new_feed(chain: Client, payer: Keypair, mint: str, value: int) -> Feed:
    feed, authority = Keypair(), Keypair()
    rent = chain.get_minimum_balance_for_rent_exemption(feed_client.FEED_SIZE).value
    send(chain, payer, [
        feed_client.create_feed_account(PRICE_FEED, payer=payer.pubkey(), feed=feed.pubkey(), lamports=rent),
        feed_client.initialize(PRICE_FEED, feed=feed.pubkey(), authority=authority.pubkey(), mint=Pubkey.from_string(mint), exponent=-2,
                               max_staleness=feed_client.abi.MAX_STALENESS_LIMIT, job_hash=feed_client.job_hash("GET https://prices.example/v1/test")),
    ], [feed, authority])
    made = Feed(feed.pubkey(), authority)
    made.set(chain, payer, value)
    return made


def address_of(api, lookup: dict, on: str = "") -> str:
    response = api.call("post", f"/api/v1/accounts/single{on}", {"itemData": lookup})
    assert response.status_code == 200, response.json()
    return response.json()["onchain"]["id"]


def token_balance(chain: Client, address: str) -> int:
    return int(chain.get_token_account_balance(Pubkey.from_string(address)).value.amount)


def call(api, method: str, path: str, item: dict | None = None, *, wait: bool = True, request_id=None, **envelope):
    body = {**({"itemData": item} if item is not None else {}), **envelope}
    return api.call(method, f"{BASE}{path}" + ("?wait=confirmed" if wait else ""), body, request_id=request_id)


def landed(response, status: int = 200, result: str = "svmTransaction") -> dict:
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    assert (body[result] if result else body)["status"] in DONE, body
    return body


@dataclass
class World:
    """Who takes part: an issuer (mint authority of the instruments), a lender and a borrower
    (managed wallets with network currency), ACME bonds (6 decimals, $10.00 on its feed) the
    borrower holds and USD coins (2 decimals, $1.00) the lender holds; a payer for the feeds."""

    payer: Keypair
    issuer: dict
    lender: dict
    borrower: dict
    acme: dict
    usd: dict
    acme_feed: Feed
    usd_feed: Feed
    borrower_acme: dict
    lender_usd: dict

    @property
    def borrower_pays(self) -> dict:
        return {"svmTransactionConfig": {"feePayer": self.borrower}}

    def holding(self, owner: dict, instrument: dict) -> dict:
        return {"owner": owner, "financialInstrument": instrument}


def world(api, chain: Client, *, acme_units: int = 1_000 * 10**6, usd_units: int = 100_000 * 100, borrower_key: Keypair | None = None) -> World:
    """``borrower_key``: the borrower's key, imported so that the test can also sign as the
    borrower outside the service."""
    payer = funded(chain, 20 * 10**9)
    issuer, lender, borrower = wallet(api), wallet(api), wallet(api, borrower_key)
    for party in (lender, borrower):
        wait(chain, chain.request_airdrop(Pubkey.from_string(address_of(api, party)), 5 * 10**9).value)
    acme = instrument(api, authority=issuer, kind="CORPORATE_BOND", decimals=6)
    usd = instrument(api, authority=issuer, kind="STABLECOIN", decimals=2)
    acme_feed, usd_feed = new_feed(chain, payer, acme["onchainId"], 10_00), new_feed(chain, payer, usd["onchainId"], 1_00)
    borrower_acme = position(api, borrower, acme)
    if acme_units:
        settled(mint(api, at(borrower_acme), {"lamports": acme_units}))
    lender_usd = position(api, lender, usd)
    settled(mint(api, at(lender_usd), {"lamports": usd_units}))
    return World(payer, issuer, lender, borrower, acme, usd, acme_feed, usd_feed, borrower_acme, lender_usd)


def strategy(api, w: World, *, lender: dict | None = None, terms: dict | None = None, liquidity: int = 50_000 * 100, mode: str = "FLAG", wait_for: bool = True) -> dict:
    """A strategy lending USD against ACME (feeds at most an hour old), with ``liquidity``
    base units of USD deposited from the lender's position."""
    lender = lender or w.lender
    item = {"defiProtocol": "PARTNER_LENDING", "lender": lender, "terms": terms or TERMS, "liquidationMode": mode,
            "pledgeInstruments": [{"financialInstrument": w.acme, "dataSource": w.acme_feed.lookup, "maxAgeSeconds": 3_600}],
            "borrowInstruments": [{"financialInstrument": w.usd, "dataSource": w.usd_feed.lookup, "maxAgeSeconds": 3_600}]}
    created = landed(call(api, "post", "/strategies", item, svmTransactionConfig={"feePayer": lender}), 201)["newLoanStrategy"]
    if liquidity:
        landed(call(api, "patch", "/strategies/liquidity", {"loanStrategy": created, "action": "DEPOSIT", "financialInstrument": w.usd, "value": {"lamports": liquidity}}))
    return created


def expected(terms: dict | None = None) -> dict:
    terms = terms or TERMS
    return {"expectedApy": terms["apy"], "expectedLqt": [terms["loanToValueRatio"], terms["liquidationRatio"]]}


def loan_item(w: World, strategy_address: str, *, pledge: int, borrow: int, terms: dict | None = None, **extra) -> dict:
    return {
        "defiProtocol": "PARTNER_LENDING",
        "partnerLendingDetails": {"loanStrategyAddress": strategy_address, "expectedLoanValues": expected(terms)},
        "itemsToPledge": [{"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"lamports": pledge}}],
        "itemsToBorrow": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"lamports": borrow}}],
        **extra,
    }


def create_loan(api, w: World, strategy_address: str, *, pledge: int, borrow: int, wait: bool = True, request_id=None, **extra):
    return call(api, "post", "", loan_item(w, strategy_address, pledge=pledge, borrow=borrow, **extra), wait=wait, request_id=request_id, **w.borrower_pays)


def details(api, escrow: dict, **item) -> dict:
    response = call(api, "post", "/single", {"escrow": escrow, **item}, wait=False)
    assert response.status_code == 200, response.json()
    return response.json()
