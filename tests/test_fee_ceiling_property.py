"""Property: whatever computeUnitConfig a request asks for, the platform's fee payer pays at
most the prioritization-fee ceiling plus the signature fees of each transaction it pays for
(docs/transactions.md, "Who pays the fee, and how much at most"), in every area: the rule is
the engine's (transactions/fees.py), and this holds it to every chain-changing operation
the API has, with no feePayer. The fee payer's lamports are read with an unmodified
solana-py client.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st
from solders.pubkey import Pubkey

from chain import builder
from chain.fees import LAMPORTS_PER_SIGNATURE, message_fee
from transactions import fee_payers, fees
from transactions.models import Transaction
from transactions.tests.chainkit import wallet

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
SOL = 10**9
#: The largest computeUnitConfig the schema admits (ledger_project/api/envelope.py).
LARGEST = {"limit": 1_400_000, "price": 10**12}
CEILING = 20_000


@pytest.fixture(autouse=True)
def policy(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    settings.LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS = CEILING
    settings.LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS = None
    fees.platform_fees_cache_clear()


def _operations(api) -> list[tuple[str, str, dict]]:
    """One valid request of each chain-changing operation the platform's fee payer can pay
    for, none naming a feePayer. (Create Durable Nonce Account needs a feePayer: it pays the
    account's rent, which the platform never does.)"""
    from positions.tests.kit import instrument, position

    funder = wallet(api, 3 * SOL)
    other = wallet(api, 1_000_000)
    token = instrument(api, authority={"offchainId": funder["offchainId"]})
    mine = position(api, {"offchainId": funder["offchainId"]}, token)
    theirs = position(api, {"offchainId": other["offchainId"]}, token)
    minted = api.call("post", "/api/v1/positions/mint?wait=confirmed", {"itemData": {"position": {"position": {"offchainId": mine["offchainId"]}}, "value": {"amount": "1000"}}})
    assert minted.status_code == 200, minted.json()
    return [
        ("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}, "seed": {"lamports": 1_000_000}}}),
        ("post", "/api/v1/positions/transfer-network-currency", {"itemData": {"source": funder, "destination": other, "value": {"lamports": 1_000}}}),
        ("post", "/api/v1/positions/transfer", {"itemData": {"source": {"position": {"offchainId": mine["offchainId"]}}, "destination": {"position": {"offchainId": theirs["offchainId"]}}, "value": {"amount": "1"}}}),
        ("post", "/api/v1/positions/mint", {"itemData": {"position": {"position": {"offchainId": mine["offchainId"]}}, "value": {"amount": "1"}}}),
        ("post", "/api/v1/positions/burn", {"itemData": {"position": {"position": {"offchainId": mine["offchainId"]}}, "value": {"amount": "1"}}}),
        ("post", "/api/v1/positions", {"itemData": {"owner": {"offchainId": wallet(api)["offchainId"]}, "financialInstrument": {"offchainId": token["offchainId"]}}}),
        ("post", "/api/v1/financial-instruments", {"itemData": {"version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}},
                                                                "mintAuthority": {"offchainId": funder["offchainId"]}, "onchainData": {"name": "Prop", "symbol": "PRP", "decimals": 2}}}),
        ("patch", "/api/v1/positions/freeze", {"itemData": {"position": {"position": {"offchainId": theirs["offchainId"]}}}}),
        ("post", "/api/v1/address-lookup-tables", {"itemData": {"authority": {"offchainId": funder["offchainId"]}, "componentAddresses": [{"offchainId": other["offchainId"]}]}}),
    ]


def _with_compute(body: dict, compute: dict) -> dict:
    return {**body, "svmTransactionConfig": {**body.get("svmTransactionConfig", {}), "computeUnitConfig": compute}}


@pytest.mark.django_db(transaction=True)
def test_no_operation_makes_the_platform_pay_more_than_the_ceiling(api, tenant, celery_worker_process, chain):
    operations = _operations(api)
    payer = str(fee_payers.platform_fee_payer(CLUSTER).pubkey)
    before = chain.get_balance(Pubkey.from_string(payer)).value
    allowed = 0
    reached_the_engine = 0
    refusals: list = []
    accepted: list = []

    def attempt(method, path, body, compute) -> None:
        nonlocal allowed, reached_the_engine
        last = Transaction.unscoped.filter(tenant=tenant).order_by("-pk").values_list("pk", flat=True).first() or 0
        response = api.call(method, path + "?wait=confirmed", _with_compute(body, compute))
        assert response.status_code < 500, (path, compute, response.content[:300])
        if response.status_code >= 400:
            codes = [e["code"] for e in response.json()["errors"]]
            reached_the_engine += "PRIORITY_FEE_TOO_HIGH" in codes
            refusals.append((path, codes, response.json()["errors"][0]["message"][:120]))
            assert Transaction.unscoped.filter(tenant=tenant, pk__gt=last).count() == 0, (path, compute)
            return
        for tx in Transaction.unscoped.filter(tenant=tenant, pk__gt=last):
            fee = message_fee(builder.message_from_bytes(bytes(tx.message)))
            if tx.fee_payer == payer:
                assert fee.priority_fee <= CEILING, (path, compute, fee)
                assert tx.platform_paid and tx.max_fee == fee.total
                allowed += fee.signature_fee + CEILING
                accepted.append(path)

    # The largest configuration the schema admits: refused by every operation.
    for method, path, body in operations:
        attempt(method, path, body, LARGEST)
    assert reached_the_engine == len(operations), [r for r in refusals if "PRIORITY_FEE_TOO_HIGH" not in r[1]]

    # Any configuration: refused or within the ceiling.
    @hypothesis_settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(operations), st.integers(1, 1_400_000), st.integers(0, 10**12) | st.integers(0, 1_000), st.booleans())
    def any_config(operation, limit, price, estimate):
        compute = {"limit": limit, "priceEstimate": {"calculationStrategy": "DEFAULT"}} if estimate else {"limit": limit, "price": price}
        attempt(*operation, compute)

    any_config()
    assert accepted, refusals  # some within the ceiling went through
    after = chain.get_balance(Pubkey.from_string(payer)).value
    # A localnet top-up by airdrop only ever adds.
    assert after >= before - allowed, (before, after, allowed)
    assert LAMPORTS_PER_SIGNATURE == 5_000
