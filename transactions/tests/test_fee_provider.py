"""priceEstimate's PARTNER_FEE_PROVIDER (docs/transactions.md, "Compute-unit price
estimates"): the cluster's getPriorityFeeEstimate provider when one is configured — here the
local node, which answers it as the providers document it — else, and when it fails, the
median of getRecentPrioritizationFees; lowered to the platform's ceiling when the platform
pays. Each test's accounts are fresh, so the prices recorded for them are its own."""

from __future__ import annotations

import json
import logging
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from solders.compute_budget import set_compute_unit_price
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from chain import builder, fee_provider
from chain.fees import message_fee, price_within
from chain.rpc import rpc_for
from localnet.testing import rpc_call
from transactions.models import Transaction
from transactions.tests.chainkit import funded, send, wallet

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
SOL = 10**9
SECRET = "k3y-0f-the-pr0vider"
TRANSFER = "/api/v1/positions/transfer-network-currency"
ESTIMATE = {"provider": "PARTNER_FEE_PROVIDER", "calculationStrategy": "DEFAULT", "priorityLevel": "RECOMMENDED"}


@pytest.fixture(autouse=True)
def fresh_providers(settings):
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {}
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    fee_provider.providers_clear()
    yield
    fee_provider.providers_clear()


@pytest.fixture
def calls(monkeypatch):
    """Which source each estimate came from: the provider's answers and the fallback's."""
    seen = {"provider": 0, "fallback": 0}
    ask, fallback = fee_provider.ask_provider, fee_provider.recent_fees_price

    def counted_ask(*args):
        seen["provider"] += 1
        return ask(*args)

    def counted_fallback(*args):
        seen["fallback"] += 1
        return fallback(*args)

    monkeypatch.setattr(fee_provider, "ask_provider", counted_ask)
    monkeypatch.setattr(fee_provider, "recent_fees_price", counted_fallback)
    return seen


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        if self.server.answer is None:  # hang until the test ends
            self.server.release.wait(30)
            return
        body = self.server.answer.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def provider():
    """A tiny provider on this machine: ``answer`` (JSON text) to every request, or None to
    hang; ``url`` carries an API key in its path and query, as providers' URLs do."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.requests, server.answer, server.release = [], None, threading.Event()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v2/{SECRET}?api-key={SECRET}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def market(chain, prices, target: Pubkey | None = None) -> Pubkey:
    """Transactions paying ``prices`` per compute unit, each writing ``target`` (fresh unless given)."""
    payer, target = funded(chain), target or Keypair().pubkey()
    for index, price in enumerate(prices):
        send(chain, payer, [set_compute_unit_price(price), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1_000_000 + index))])
    return target


def plan_writing(target: Pubkey) -> builder.BuildPlan:
    sender = Keypair().pubkey()
    return builder.BuildPlan([transfer(TransferParams(from_pubkey=sender, to_pubkey=target, lamports=1))], fee_payer=sender, compute=builder.ComputeUnits(estimate=True))


def node_estimate(url: str, accounts) -> Decimal:
    """What the node answers the adapter's own request, read with a raw JSON-RPC call."""
    answer = rpc_call(url, "getPriorityFeeEstimate", [{"accountKeys": [str(a) for a in accounts], "options": {"recommended": True}}])
    return Decimal(str(answer["result"]["priorityFeeEstimate"]))


def fallback_median(url: str, accounts) -> int:
    """The non-zero fees getRecentPrioritizationFees answers, their median rounded up."""
    paid = sorted(e["prioritizationFee"] for e in rpc_call(url, "getRecentPrioritizationFees", [[str(a) for a in accounts]])["result"] if e["prioritizationFee"])
    n = len(paid)
    return 0 if not n else paid[n // 2] if n % 2 else -(-(paid[n // 2 - 1] + paid[n // 2]) // 2)


def price_of(message) -> int:
    return message_fee(message).compute_unit_price


def _transfer(api, source, destination, **config):
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": 1_000}}, "svmTransactionConfig": config}
    return api.call("post", TRANSFER + "?wait=confirmed", body)


def _recorded_message(response):
    assert response.status_code == 200, response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    return tx, builder.message_from_bytes(bytes(tx.message))


def test_a_provider_figure_is_rounded_up_to_whole_micro_lamports():
    assert [fee_provider.micro_lamports(v) for v in (Decimal("1500.5"), Decimal("1500.0"), 1500, Decimal("0.0001"), 0, Decimal("1e999999999"))] == [1501, 1500, 1500, 1, 0, 10**12]
    for bad in (Decimal("-1"), True, "1500", None, Decimal("NaN")):
        with pytest.raises(fee_provider.ProviderFailed):
            fee_provider.micro_lamports(bad)


@pytest.mark.django_db
def test_the_provider_is_asked_as_documented_and_its_answer_rounded_up(settings, localnet_url, provider, calls):
    provider.answer = '{"jsonrpc": "2.0", "id": 1, "result": {"priorityFeeEstimate": 777.2}}'
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {CLUSTER: provider.url}
    plan = plan_writing(Keypair().pubkey())
    built = builder.build(plan, rpc_for(CLUSTER))
    assert price_of(built.message) == 778 and calls == {"provider": 1, "fallback": 0}
    sender, target = (str(m.pubkey) for m in plan.instructions[0].accounts)
    assert provider.requests == [{"jsonrpc": "2.0", "id": 1, "method": "getPriorityFeeEstimate", "params": [{"accountKeys": [sender, target], "options": {"recommended": True}}]}]


@pytest.mark.django_db
def test_the_price_is_what_the_nodes_get_priority_fee_estimate_answers(settings, localnet_url, chain, calls):
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {CLUSTER: f"{localnet_url}/?api-key={SECRET}"}
    target = market(chain, [1_001, 2_000])
    plan = plan_writing(target)
    expected = node_estimate(localnet_url, [plan.fee_payer, target])
    assert expected == Decimal("1500.5")  # the median of the two, with its fraction
    built = builder.build(plan, rpc_for(CLUSTER))
    assert price_of(built.message) == 1_501 and calls == {"provider": 1, "fallback": 0}


@pytest.mark.django_db
def test_without_a_provider_the_price_is_the_median_of_recent_prioritization_fees(localnet_url, chain, calls):
    target = market(chain, [1_001, 2_000, 9_000])
    plan = plan_writing(target)
    expected = fallback_median(localnet_url, [plan.fee_payer, target])
    assert expected in (2_000, 1_001, 5_501)  # one slot each: 2,000; two sharing a slot: its lowest of them
    assert price_of(builder.build(plan, rpc_for(CLUSTER)).message) == expected and calls == {"provider": 0, "fallback": 1}


@pytest.mark.django_db(transaction=True)
def test_a_transfer_pays_the_provider_estimate_lowered_to_the_ceiling_when_the_platform_pays(api, tenant, settings, localnet_url, celery_worker_process, chain):
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {CLUSTER: f"{localnet_url}/?api-key={SECRET}"}
    settings.LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS = 100
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    market(chain, [3_001, 6_000], target=Pubkey.from_string(destination["onchainId"]))
    accounts = [source["onchainId"], destination["onchainId"]]
    assert node_estimate(localnet_url, accounts) == Decimal("4500.5")
    # The source pays its own fee: the provider's estimate, rounded up, unlowered.
    _, message = _recorded_message(_transfer(api, source, destination, feePayer=source, computeUnitConfig={"priceEstimate": ESTIMATE}))
    assert price_of(message) == 4_501
    # The platform pays: the highest price within 100 lamports at the message's limit.
    estimate = node_estimate(localnet_url, accounts)
    tx, message = _recorded_message(_transfer(api, source, destination, computeUnitConfig={"priceEstimate": ESTIMATE}))
    fee = message_fee(message)
    assert tx.platform_paid and fee.compute_unit_price == price_within(100, fee.compute_unit_limit) < estimate
    assert fee.priority_fee <= 100


@pytest.mark.django_db(transaction=True)
def test_a_provider_answering_an_error_falls_back_and_is_logged_once(api, tenant, settings, localnet_url, celery_worker_process, chain, provider, calls, caplog):
    provider.answer = '{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}}'
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {CLUSTER: provider.url}
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    market(chain, [2_000, 4_001], target=Pubkey.from_string(destination["onchainId"]))
    expected = fallback_median(localnet_url, [source["onchainId"], destination["onchainId"]])
    with caplog.at_level(logging.INFO, logger="ledger.chain"):
        first = _transfer(api, source, destination, computeUnitConfig={"priceEstimate": ESTIMATE})
        _, message = _recorded_message(first)
        assert price_of(message) == expected
        second = _transfer(api, source, destination, computeUnitConfig={"priceEstimate": ESTIMATE})
        assert second.status_code == 200, second.json()
    failures = [r for r in caplog.records if getattr(r, "event", None) == "FEE_PROVIDER_FAILED"]
    assert len(failures) == 1 and "JSON-RPC error -32603" in failures[0].getMessage()
    # Failing, the provider is not asked again within LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS.
    assert len(provider.requests) == 1 and calls["fallback"] == 2
    assert SECRET not in caplog.text and SECRET not in first.content.decode() + second.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_hanging_provider_falls_back_after_its_timeout(api, tenant, settings, localnet_url, celery_worker_process, chain, provider, calls, caplog):
    settings.LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS = 0.3
    settings.LEDGER_PRIORITY_FEE_PROVIDER_URLS = {CLUSTER: provider.url}  # answer None: it never answers
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    market(chain, [2_000, 4_001], target=Pubkey.from_string(destination["onchainId"]))
    expected = fallback_median(localnet_url, [source["onchainId"], destination["onchainId"]])
    with caplog.at_level(logging.INFO, logger="ledger.chain"):
        _, message = _recorded_message(_transfer(api, source, destination, computeUnitConfig={"priceEstimate": ESTIMATE}))
    assert price_of(message) == expected and calls == {"provider": 1, "fallback": 1}
    failures = [r for r in caplog.records if getattr(r, "event", None) == "FEE_PROVIDER_FAILED"]
    assert len(failures) == 1 and "ReadTimeout" in failures[0].getMessage() and SECRET not in caplog.text
