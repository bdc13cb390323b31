"""Tenancy over every endpoint: no key → 401; another tenant's record fails exactly like a
missing one and changes nothing. New endpoints join ENDPOINTS as their areas land."""

from __future__ import annotations

import uuid

import pytest
from django.urls import get_resolver

from accounts.models import Account
from accounts.tests.factories import AccountFactory
from conftest import assert_error
from instruments.models import FinancialInstrument
from instruments.tests.factories import FinancialInstrumentFactory

MARKET_DATA = "/api/v1/market-data/onchain-data-source"
_JOB = '{"tasks": [{"httpTask": {"url": "https://prices.example/acme"}}, {"jsonParseTask": {"path": "$.price"}}]}'


def _webhook(lookup: dict) -> dict:
    """A webhook is named by offchainId only."""
    return {"offchainId": lookup.get("offchainId") or str(uuid.uuid4())}


_LENDING = {"loanStrategyAddress": "11111111111111111111111111111112", "expectedLoanValues": {"expectedApy": 100, "expectedLqt": [5_000, 8_000]}}

# (method, path, body builder given a lookup of the target record, or None for no target)
ENDPOINTS = [
    ("post", "/api/v1/auth/whoami", None),
    ("post", "/api/v1/accounts", None),
    ("post", "/api/v1/accounts/single", lambda lk: {"itemData": lk}),
    ("post", "/api/v1/accounts/single/private-key", lambda lk: {"itemData": lk}),
    ("post", "/api/v1/accounts/single/balance", lambda lk: {"itemData": {"account": lk}}),
    ("post", "/api/v1/accounts/single/tenant-info", lambda lk: {"itemData": lk}),
    ("post", "/api/v1/accounts/bulk/detailed", None),
    ("patch", "/api/v1/accounts", lambda lk: {"itemData": {"account": lk, "comments": "x"}}),
    ("patch", "/api/v1/accounts/inactivate", lambda lk: {"itemData": {"account": lk}}),
    ("post", "/api/v1/transactions/single/status", None),
    ("post", "/api/v1/transactions/single", None),
    ("post", "/api/v1/transactions/bulk/detailed", None),
    ("post", "/api/v1/financial-instruments", None),
    ("post", "/api/v1/financial-instruments/single", lambda lk: {"itemData": lk}),
    ("post", "/api/v1/financial-instruments/single/circulating-supply", lambda lk: {"itemData": lk}),
    ("post", "/api/v1/financial-instruments/bulk/detailed", None),
    ("patch", "/api/v1/financial-instruments", lambda lk: {"itemData": {"mintAccount": lk, "offchainData": {"description": "x"}}}),
    ("patch", "/api/v1/financial-instruments/pause", lambda lk: {"itemData": {"financialInstrument": lk}}),
    ("patch", "/api/v1/financial-instruments/unpause", lambda lk: {"itemData": {"financialInstrument": lk}}),
    ("patch", "/api/v1/financial-instruments/close", lambda lk: {"itemData": {"financialInstrumentToClose": lk}}),
    ("post", "/api/v1/financial-instruments/token-extensions-calculator", None),
    ("post", "/api/v1/financial-instruments/allow-list", lambda lk: {"itemData": {"financialInstrument": lk}}),
    ("patch", "/api/v1/financial-instruments/allow-list/add", lambda lk: {"itemData": {"financialInstrument": lk, "owners": [{"onchainId": "11111111111111111111111111111112", "offPlatform": True}]}}),
    ("patch", "/api/v1/financial-instruments/allow-list/remove", lambda lk: {"itemData": {"financialInstrument": lk, "owners": [{"onchainId": "11111111111111111111111111111112", "offPlatform": True}]}}),
    ("post", "/api/v1/financial-instruments/allow-list/single", lambda lk: {"itemData": {"financialInstrument": lk}}),
    ("post", "/api/v1/positions", lambda lk: {"itemData": {"owner": lk, "financialInstrument": {"offchainId": str(uuid.uuid4())}}}),
    ("post", "/api/v1/positions/single", lambda lk: {"itemData": {"position": lk}}),
    ("post", "/api/v1/positions/single/balance", lambda lk: {"itemData": {"position": lk}}),
    ("post", "/api/v1/positions/transfer-network-currency", lambda lk: {"itemData": {"source": lk, "destination": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}, "value": {"lamports": 1_000_000}}}),
    ("patch", "/api/v1/transactions/approve", None),
    ("patch", "/api/v1/transactions/reject", None),
    ("patch", "/api/v1/positions", lambda lk: {"itemData": {"position": {"position": lk}, "offchainReferences": {"name": "x"}}}),
    ("patch", "/api/v1/positions/inactivate", lambda lk: {"itemData": {"position": {"position": lk}}}),
    ("patch", "/api/v1/positions/freeze", lambda lk: {"itemData": {"position": {"position": lk}}}),
    ("patch", "/api/v1/positions/unfreeze", lambda lk: {"itemData": {"position": {"position": lk}}}),
    ("post", "/api/v1/positions/bulk/detailed", None),
    ("post", "/api/v1/positions/mint", lambda lk: {"itemData": {"position": {"position": lk}, "value": {"lamports": 1}}}),
    ("post", "/api/v1/positions/burn", lambda lk: {"itemData": {"position": {"position": lk}, "value": {"lamports": 1}}}),
    ("post", "/api/v1/positions/transfer", lambda lk: {"itemData": {"source": {"position": lk}, "destination": {"position": lk}, "value": {"lamports": 1}}}),
    ("post", "/api/v1/positions/trade", lambda lk: {"itemData": {"legs": [{"source": {"position": lk}, "destination": {"position": lk}, "value": {"lamports": 1}}] * 2}}),
    # Batch payouts (docs/positions.md): a batch answers 200 with each item's own result; another organization's
    # position fails its item exactly like a missing one (checked on the items below). A batch is named by offchainId.
    ("post", "/api/v1/positions/transfer/batch", lambda lk: {"itemData": {"items": [{"source": {"position": lk}, "destination": {"position": lk}, "value": {"lamports": 1}}]}}),
    ("post", "/api/v1/positions/transfer-network-currency/batch",
     lambda lk: {"itemData": {"items": [{"source": lk, "destination": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}, "value": {"lamports": 1_000_000}}]}}),
    ("post", "/api/v1/positions/batches/single", lambda lk: {"itemData": {"batch": {"offchainId": lk.get("offchainId") or str(uuid.uuid4())}}}),
    # Another tenant's transaction answers like a missing one: transactions/tests/test_api_sign.py, test_api_submit.py.
    ("patch", "/api/v1/transactions/sign", None),
    ("patch", "/api/v1/transactions/submit", None),
    # Withdraw Transaction (our extension): the target is a PARTIALLY_SIGNED transaction (transactions/tests/test_api_withdraw.py too).
    ("patch", "/api/v1/transactions/withdraw", lambda lk: {"itemData": {"transaction": lk, "reason": "x"}}),
    ("post", "/api/v1/address-lookup-tables", lambda lk: {"itemData": {"authority": lk}}),
    ("patch", "/api/v1/address-lookup-tables", lambda lk: {"itemData": {"addressLookupTable": lk, "action": "DEACTIVATE"}}),
    ("patch", "/api/v1/address-lookup-tables/extend", lambda lk: {"itemData": {"addressLookupTable": lk, "componentAddresses": [{"onchainId": "11111111111111111111111111111112", "offPlatform": True}]}}),
    ("post", "/api/v1/address-lookup-tables/single", lambda lk: {"itemData": {"addressLookupTable": lk}}),
    ("post", "/api/v1/address-lookup-tables/bulk/detailed", None),
    ("post", "/api/v1/durable-nonce-accounts", lambda lk: {"itemData": {"count": 1, "nonceAuthority": lk}, "svmTransactionConfig": {"feePayer": lk}}),
    ("post", "/api/v1/durable-nonce-accounts/single", lambda lk: {"itemData": {"durableNonceAccount": lk}}),
    ("post", "/api/v1/durable-nonce-accounts/bulk/detailed", None),
    # Threshold keys (accounts/mpc): sessions are named by sessionId; another organization's session answers like a
    # missing one in accounts/tests/test_api_dkg.py (test_another_organizations_sessions_are_like_missing_ones).
    ("post", "/api/v1/accounts/dkg/status", None),
    ("post", "/api/v1/accounts/dkg/round1", None),
    ("post", "/api/v1/accounts/dkg/round2", None),
    ("post", "/api/v1/accounts/dkg/finish", None),
    ("post", "/api/v1/accounts/dkg/refresh", lambda lk: {"itemData": {"account": lk}}),
    ("post", "/api/v1/transactions/dkg/open", lambda lk: {"itemData": {"account": lk, "transaction": {"offchainId": str(uuid.uuid4())}, "mpcPlayerCodes": ["BACKEND_A", "BACKEND_B"]}}),
    ("post", "/api/v1/transactions/dkg/commit", None),
    ("post", "/api/v1/transactions/dkg/status", None),
    # Loan remittance vaults (docs/vaults.md): another organization's vault answers like a missing one.
    ("post", "/api/v1/platform-programs/loan-remittance/create-vault",
     lambda lk: {"itemData": {"loanFinancialInstrument": lk, "paymentFinancialInstrument": lk, "admin": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}}}),
    ("post", "/api/v1/platform-programs/loan-remittance/update-whitelist", lambda lk: {"itemData": {"vault": lk, "action": "ADD", "destination": {"owner": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}}}}),
    ("post", "/api/v1/platform-programs/loan-remittance/repayment", lambda lk: {"itemData": {"vault": lk, "destination": {"owner": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}}, "value": {"lamports": 1}}}),
    ("post", "/api/v1/platform-programs/loan-remittance/close-vault", lambda lk: {"itemData": {"vault": lk}}),
    ("post", "/api/v1/platform-programs/loan-remittance/vault-details", lambda lk: {"itemData": lk}),
    # Loans (docs/loans.md): another organization's loan (escrow) or strategy answers like a missing one.
    ("post", "/api/v1/loans", lambda lk: {"itemData": {"defiProtocol": "PARTNER_LENDING", "partnerLendingDetails": _LENDING,
                                                        "itemsToPledge": [{"positionLookup": {"position": lk}, "value": {"lamports": 1}}],
                                                        "itemsToBorrow": [{"positionLookup": {"position": lk}, "value": {"lamports": 1}}]}, "svmTransactionConfig": {"feePayer": lk}}),
    ("post", "/api/v1/loans/single", lambda lk: {"itemData": {"escrow": lk}}),
    ("post", "/api/v1/loans/bulk", None),
    ("patch", "/api/v1/loans/swap-collateral", lambda lk: {"itemData": {"defiProtocol": "PARTNER_LENDING", "escrow": lk, "itemsToWithdraw": [{"positionLookup": {"position": lk}, "value": {"lamports": 1}}]}}),
    ("patch", "/api/v1/loans/repay", lambda lk: {"itemData": {"defiProtocol": "PARTNER_LENDING", "escrow": lk, "itemsToRepay": [{"positionLookup": {"position": lk}, "repayAll": True}]}}),
    ("patch", "/api/v1/loans/close", lambda lk: {"itemData": {"defiProtocol": "PARTNER_LENDING", "escrow": lk}}),
    ("patch", "/api/v1/loans/refinance", lambda lk: {"itemData": {"defiProtocol": "PARTNER_LENDING", "escrow": lk, "fromLender": {"onchainId": "11111111111111111111111111111112", "offPlatform": True},
                                                                  "partnerLendingDetails": _LENDING}}),
    ("post", "/api/v1/loans/strategies", lambda lk: {"itemData": {"lender": lk, "terms": {"apy": 100, "loanToValueRatio": 5_000, "liquidationRatio": 8_000, "duration": {"code": "DAYS", "unit": 30}}}}),
    ("patch", "/api/v1/loans/strategies", lambda lk: {"itemData": {"loanStrategy": lk, "liquidationMode": "LIQUIDATE"}}),
    ("patch", "/api/v1/loans/strategies/liquidity", lambda lk: {"itemData": {"loanStrategy": lk, "action": "DEPOSIT", "financialInstrument": {"onchainId": "11111111111111111111111111111112"},
                                                                            "value": {"lamports": 1}}}),
    ("post", "/api/v1/loans/strategies/single", lambda lk: {"itemData": {"loanStrategy": lk}}),
    # Webhooks (docs/webhooks.md): the target is a webhook subscription.
    ("post", "/api/v1/webhooks", None),
    ("patch", "/api/v1/webhooks", lambda lk: {"itemData": {"webhook": _webhook(lk), "status": "DISABLED"}}),
    ("post", "/api/v1/webhooks/single", lambda lk: {"itemData": _webhook(lk)}),
    ("post", "/api/v1/webhooks/single/signing-secret", lambda lk: {"itemData": _webhook(lk)}),
    ("post", "/api/v1/webhooks/bulk/detailed", None),
    ("post", "/api/v1/webhooks/replay", lambda lk: {"itemData": {"webhook": _webhook(lk), "fromTime": "2020-01-01T00:00:00Z", "toTime": "2030-01-01T00:00:00Z"}}),
    # Market data (docs/marketdata.md): the target is a data source (create: the priced instrument).
    ("post", MARKET_DATA, lambda lk: {"itemData": {"defiProtocol": "PARTNER_ORACLE", "partnerOracleDetails": {"kind": "QUOTES", "jobDefinition": _JOB}, "financialInstrument": lk}}),
    ("patch", MARKET_DATA, lambda lk: {"itemData": {"onchainDataSource": lk, "dataDetails": {"ratingProvider": "x"}}}),
    ("patch", f"{MARKET_DATA}/refresh", lambda lk: {"itemData": {"onchainDataSource": lk}}),
    ("post", f"{MARKET_DATA}/single", lambda lk: {"itemData": {"onchainDataSource": lk}}),
    ("post", f"{MARKET_DATA}/bulk/detailed", None),
]
PUBLIC = {"/api/v1/auth/token"}


def test_every_api_url_is_in_the_matrix():
    """A new endpoint without tenancy cases fails here until it is added above."""
    listed = {path[len("/api/v1/"):] for _, path, _ in ENDPOINTS}
    routes = set()
    for pattern in get_resolver().url_patterns:
        if str(pattern.pattern) == "api/v1/":
            for inc in pattern.url_patterns:
                for p in getattr(inc, "url_patterns", [inc]):
                    routes.add(str(p.pattern).replace("<str:detail_level>", "detailed"))
    missing = {r for r in routes if f"/api/v1/{r}" not in PUBLIC and r not in listed}
    assert not missing, f"endpoints without tenancy cases: {missing}"


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_no_key_is_401(anon, method, path, body):
    response = anon.call(method, path, body(({"onchainId": "11111111111111111111111111111111"})) if body else {})
    assert_error(response, 401, "UNAUTHENTICATED")


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", [e for e in ENDPOINTS if e[2] is not None], ids=[f"{m} {p}" for m, p, b in ENDPOINTS if b is not None])
def test_other_tenants_record_is_like_missing_and_unchanged(api, other_tenant, localnet_url, method, path, body):
    if "/financial-instruments" in path:
        theirs = FinancialInstrumentFactory(tenant=other_tenant, comments="theirs")
        model = FinancialInstrument
    elif path == "/api/v1/transactions/withdraw":
        from solders.keypair import Keypair

        from transactions.models import Transaction

        model = Transaction
        theirs = Transaction.unscoped.create(tenant=other_tenant, cluster="CHAIN_LOCALNET", operation="test", status="PARTIALLY_SIGNED", message=b"m",
                                             blockhash="11111111111111111111111111111111", fee_payer=str(Keypair().pubkey()))
    elif "/address-lookup-tables/" in path or method == "patch" and path.endswith("/address-lookup-tables"):
        from lookup_tables.models import AddressLookupTable
        from lookup_tables.tests.factories import AddressLookupTableFactory

        theirs, model = AddressLookupTableFactory(tenant=other_tenant), AddressLookupTable
    elif "/webhooks" in path:
        from webhooks.models import WebhookSubscription
        from webhooks.services import webhook_create

        theirs = webhook_create(tenant=other_tenant, cluster="CHAIN_LOCALNET", data={"name": "theirs", "endpointUrl": "https://hooks.example/theirs", "eventTypes": ["transaction.post_submit"]})
        model = WebhookSubscription
    elif "/loan-remittance/" in path and not path.endswith("/create-vault"):
        from vaults.models import Vault
        from vaults.tests.factories import make_vault

        theirs, model = make_vault(other_tenant), Vault
    elif "/loans/strategies" in path and not (method == "post" and path.endswith("/strategies")):
        from loans.models import LoanStrategy
        from loans.tests.factories import make_strategy

        theirs, model = make_strategy(other_tenant), LoanStrategy
    elif "/loans/" in path and "/strategies" not in path:
        from loans.models import Loan
        from loans.tests.factories import make_loan

        theirs, model = make_loan(other_tenant), Loan
    elif path.startswith(MARKET_DATA) and not (method == "post" and path == MARKET_DATA):
        from marketdata.models import OnchainDataSource
        from marketdata.tests.factories import make_source

        theirs, model = make_source(other_tenant), OnchainDataSource
    elif path.endswith("/batches/single"):
        from positions.models import Batch

        theirs, model = Batch.unscoped.create(tenant=other_tenant, cluster="CHAIN_LOCALNET", kind="TRANSFER", item_count=0), Batch
    elif path.endswith("/create-vault") or path == MARKET_DATA:  # the other organization's instruments
        theirs = FinancialInstrumentFactory(tenant=other_tenant, comments="theirs", al_type="LOAN")
        model = FinancialInstrument
    else:
        theirs, model = AccountFactory(tenant=other_tenant, comments="theirs"), Account
    before = model.unscoped.values().get(pk=theirs.pk)
    hidden = api.call(method, path, body({"offchainId": str(theirs.offchain_id)}))
    missing = api.call(method, path, body({"offchainId": str(uuid.uuid4())}))
    if path.endswith("/batch"):  # each item fails on its own (200): the item's error is the same for both
        assert hidden.status_code == missing.status_code == 200, (hidden.json(), missing.json())
        hidden_item, missing_item = hidden.json()["batch"]["items"][0], missing.json()["batch"]["items"][0]
        assert hidden_item["httpStatus"] == missing_item["httpStatus"] and hidden_item["httpStatus"] in (403, 404)
        assert hidden_item["errors"] == missing_item["errors"]
        assert model.unscoped.values().get(pk=theirs.pk) == before
        return
    assert hidden.status_code == missing.status_code, (hidden.json(), missing.json())
    assert hidden.status_code in (403, 404)
    assert hidden.json()["errors"] == missing.json()["errors"]
    assert model.unscoped.values().get(pk=theirs.pk) == before


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_rate_limit_is_429_everywhere(tenant, localnet_url, method, path, body, monkeypatch):
    from conftest import make_client
    from tenancy import throttling
    from tenancy.tests.factories import issue_key

    # Both calls in one window: the throttle's minute windows are fixed, and two calls either
    # side of a minute's end fall in two of them (a full run once met that).
    at = throttling._clock()
    monkeypatch.setattr(throttling, "_clock", lambda: at)
    client = make_client(issue_key(tenant, rate_limit_per_minute=1).secret)
    payload = body({"offchainId": str(uuid.uuid4())}) if body else {}
    client.call(method, path, payload)
    response = client.call(method, path, payload)
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) >= 1


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_unexpected_failure_is_500_in_error_shape(api, localnet_url, monkeypatch, method, path, body):
    import tenancy.viewsets as viewsets

    def broken(request):
        raise RuntimeError("database exploded: secret detail")

    monkeypatch.setattr(viewsets, "cluster_from_request", broken)
    response = api.call(method, path, body({"offchainId": str(uuid.uuid4())}) if body else {})
    body_json = assert_error(response, 500, "INTERNAL_ERROR")
    assert "secret detail" not in response.content.decode() and body_json["requestId"]


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_request_rules_are_one_rule_with_or_without_a_key(api, anon, localnet_url, method, path, body):
    """x-request-id must be a UUID and ?wait= one of its values on every operation, fetch or
    mutation, before authentication (docs/api.md): refused, nothing changes."""
    payload = body({"offchainId": str(uuid.uuid4())}) if body else {}
    before = Account.unscoped.count(), FinancialInstrument.unscoped.count()
    for client in (api, anon):
        good = uuid.uuid4()
        for malformed in ("not-a-uuid", "", "   ", f"{{{good}}}", f"urn:uuid:{good}", good.hex):
            assert_error(client.call(method, path, payload, HTTP_X_REQUEST_ID=malformed), 400, "INVALID_REQUEST_ID", "x-request-id")
        for wait in ("forever", "CONFIRMED", "0"):
            assert_error(client.call(method, f"{path}?wait={wait}", payload), 400, "INVALID_ENUM", "wait")
    assert (Account.unscoped.count(), FinancialInstrument.unscoped.count()) == before


@pytest.mark.django_db
def test_public_token_endpoint_follows_the_same_request_rules(anon):
    assert_error(anon.call("post", "/api/v1/auth/token", {"client_id": "x", "client_secret": "y"}, request_id="nope"), 400, "INVALID_REQUEST_ID")
    assert_error(anon.call("post", "/api/v1/auth/token?wait=forever", {"client_id": "x", "client_secret": "y"}), 400, "INVALID_ENUM")
