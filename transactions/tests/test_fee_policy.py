"""Fees are money too (docs/transactions.md, "Who pays the fee, and how much at most").

The reproductions of an outside review, with a key that has no roles: a tenant set the
priority fee the platform's fee payer pays (1,400 SOL for one transfer), and naming another
account as ``feePayer`` skipped that account's debit API keys and limits. Balances are read
back with an unmodified solana-py client.
"""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

from chain import builder
from chain.fees import message_fee
from conftest import assert_error, make_client
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions import fee_payers, fees
from transactions.models import Transaction
from transactions.tests.chainkit import wallet

pytestmark = pytest.mark.chain
TRANSFER = "/api/v1/positions/transfer-network-currency"
CLUSTER = "CHAIN_LOCALNET"
SOL = 10**9
MAX_COMPUTE = {"limit": 1_400_000, "price": 10**12}


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Seeds with no funding account come from the localnet airdrop funder (docs/accounts.md, "Who pays")."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


@pytest.fixture(autouse=True)
def fresh_budget_reads():
    fees.platform_fees_cache_clear()
    yield
    fees.platform_fees_cache_clear()


def _transfer(api, source, destination, lamports=1_000, **envelope):
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": lamports}}, **envelope}
    return api.call("post", TRANSFER + "?wait=confirmed", body)


def _balance(chain, address: str) -> int:
    return chain.get_balance(Pubkey.from_string(address)).value


def _recorded(tenant) -> int:
    return Transaction.unscoped.filter(tenant=tenant).count()


# --- 1. the platform pays a bounded fee ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_tenant_cannot_set_the_priority_fee_the_platform_pays(api, tenant, celery_worker_process, chain):
    """Reproduction 1: limit 1,400,000 × price 10^12 with no feePayer was 200."""
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    payer = str(fee_payers.platform_fee_payer(CLUSTER).pubkey)
    before, recorded = _balance(chain, payer), _recorded(tenant)
    response = _transfer(api, source, destination, svmTransactionConfig={"computeUnitConfig": MAX_COMPUTE})
    body = assert_error(response, 400, "PRIORITY_FEE_TOO_HIGH", "svmTransactionConfig.computeUnitConfig.price")
    assert "feePayer" in body["errors"][0]["message"]
    assert _recorded(tenant) == recorded and _balance(chain, payer) >= before


@pytest.mark.django_db(transaction=True)
def test_a_priority_fee_within_the_ceiling_is_paid_by_the_platform(api, tenant, settings, celery_worker_process, chain):
    settings.LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS = 20_000
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    # 100,000 units × 200,000 micro-lamports = 20,000 lamports: exactly the ceiling.
    ok = _transfer(api, source, destination, svmTransactionConfig={"computeUnitConfig": {"limit": 100_000, "price": 200_000}})
    assert ok.status_code == 200 and ok.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), ok.json()
    tx = Transaction.unscoped.get(offchain_id=ok.json()["svmTransaction"]["offchainId"])
    assert tx.platform_paid and tx.max_fee == 2 * 5_000 + 20_000
    # One micro-lamport more per unit is over it.
    assert_error(_transfer(api, source, destination, svmTransactionConfig={"computeUnitConfig": {"limit": 100_000, "price": 200_001}}),
                 400, "PRIORITY_FEE_TOO_HIGH", "svmTransactionConfig.computeUnitConfig.price")


@pytest.mark.django_db(transaction=True)
def test_an_estimated_price_is_lowered_to_the_ceiling(api, tenant, settings, monkeypatch, celery_worker_process, chain):
    settings.LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS = 10_000
    monkeypatch.setattr(builder, "estimate_price", lambda rpc, instructions: 5_000_000)  # a congested market's median
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    response = _transfer(api, source, destination, svmTransactionConfig={"computeUnitConfig": {"limit": 300_000, "priceEstimate": {"calculationStrategy": "DEFAULT"}}})
    assert response.status_code == 200, response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    fee = message_fee(builder.message_from_bytes(bytes(tx.message)))
    assert fee.compute_unit_limit == 300_000 and fee.compute_unit_price == 33_333 and fee.priority_fee == 10_000


@pytest.mark.django_db(transaction=True)
def test_an_organization_past_its_platform_fee_budget_gets_429_with_retry_after(api, tenant, settings, celery_worker_process, chain):
    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    spent = fees.platform_fees_spent(tenant, CLUSTER)
    # Room for one more two-signature transfer (10,000 lamports), not two.
    settings.LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS = spent + 15_000
    first = _transfer(api, source, destination)
    assert first.status_code == 200, first.json()
    recorded = _recorded(tenant)
    refused = _transfer(api, source, destination)
    assert_error(refused, 429, "PLATFORM_FEE_BUDGET_EXCEEDED")
    assert 1 <= int(refused["Retry-After"]) <= 24 * 3600
    assert _recorded(tenant) == recorded
    # The landed transfer counts its meta.fee, not its maximum.
    tx = Transaction.unscoped.get(offchain_id=first.json()["svmTransaction"]["offchainId"])
    tx.refresh_from_db()
    assert tx.fee is not None and fees.platform_fees_spent(tenant, CLUSTER) == spent + tx.fee
    # Paying with an account of its own is not limited by the platform's budget.
    own = _transfer(api, source, destination, svmTransactionConfig={"feePayer": source})
    assert own.status_code == 200, own.json()
    # "none" lifts the budget.
    settings.LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS = None
    assert _transfer(api, source, destination).status_code == 200


# --- 2. the fee-payer role is a debit --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_naming_an_account_as_fee_payer_passes_its_debit_api_keys(api, tenant, celery_worker_process, chain):
    """Reproduction 2: key "ops" is refused debiting X directly, and was let through naming X as feePayer."""
    keys_admin = make_client(issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS]).secret)
    issue_key(tenant, name="treasury-only")
    ops = make_client(issue_key(tenant, name="ops").secret)
    zero = [{"destinationType": t, "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 0} for t in ("OFF_PLATFORM", "NON_MANAGED", "MANAGED")]
    treasury = wallet(api, SOL, networkCurrencyDebitLimits=zero)
    assert keys_admin.call("patch", "/api/v1/accounts", {"itemData": {"account": treasury, "networkCurrencyDebitApiKeys": ["treasury-only"]}}).status_code == 200
    other, destination = wallet(api, SOL), wallet(api, 1_000_000)
    assert_error(_transfer(ops, treasury, destination), 403, "DEBIT_NOT_ALLOWED")
    before, recorded = _balance(chain, treasury["onchainId"]), _recorded(tenant)
    response = _transfer(ops, other, destination, svmTransactionConfig={"feePayer": treasury, "computeUnitConfig": {"limit": 1_400_000, "price": 500_000}})
    assert_error(response, 403, "DEBIT_NOT_ALLOWED", "svmTransactionConfig.feePayer")
    assert _recorded(tenant) == recorded and _balance(chain, treasury["onchainId"]) == before


@pytest.mark.django_db(transaction=True)
def test_a_fee_over_the_fee_payers_limit_is_held_for_approval(api, tenant, celery_worker_process, chain):
    limits = [{"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 50_000}]
    payer = wallet(api, SOL, networkCurrencyDebitLimits=limits)
    other, destination = wallet(api, SOL), wallet(api, 1_000_000)
    # 10,000 lamports of signatures + 1,400,000 × 500,000 / 10^6 = 700,000 of priority fee.
    held = _transfer(api, other, destination, svmTransactionConfig={"feePayer": payer, "computeUnitConfig": {"limit": 1_400_000, "price": 500_000}})
    assert held.status_code == 200, held.json()
    result = held.json()["svmTransaction"]
    assert result["status"] == "PENDING_APPROVAL" and "fee" in result["errorMessage"] and "NON_MANAGED" in result["errorMessage"], result
    tx = Transaction.unscoped.get(offchain_id=result["offchainId"])
    assert not tx.platform_paid and tx.max_fee == 710_000 and tx.submitted_at is None
    assert {"kind": "networkCurrency", "source": payer["onchainId"], "amount": 710_000, "destinationType": "NON_MANAGED", "fee": True} in tx.effects["debits"]
    # Within the limit it is paid at once, and the fee is among the transaction's debits.
    paid = _transfer(api, other, destination, svmTransactionConfig={"feePayer": payer})
    assert paid.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), paid.json()


@pytest.mark.django_db(transaction=True)
def test_a_fee_payers_fees_count_in_its_duration_window(api, tenant, celery_worker_process, chain):
    limits = [{"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 15_000, "durationHours": 24}]
    payer = wallet(api, SOL, networkCurrencyDebitLimits=limits)
    other, destination = wallet(api, SOL), wallet(api, 1_000_000)
    first = _transfer(api, other, destination, svmTransactionConfig={"feePayer": payer})
    assert first.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), first.json()
    second = _transfer(api, other, destination, svmTransactionConfig={"feePayer": payer})
    assert second.json()["svmTransaction"]["status"] == "PENDING_APPROVAL", second.json()
    assert "DURATION" in second.json()["svmTransaction"]["errorMessage"]


@pytest.mark.django_db(transaction=True)
def test_a_shared_fee_payers_limits_hold_another_organizations_transaction(api, tenant, other_tenant, celery_worker_process, chain):
    """ACME shares an account with GLOBEX; a fee it pays for GLOBEX counts against its limits."""
    limits = [{"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 0}]
    shared = wallet(api, SOL, shareAcrossTenants=True, orgsAllowedToSignWithPrivateKey=[other_tenant.external_id], networkCurrencyDebitLimits=limits)
    globex = make_client(issue_key(other_tenant).secret)
    source, destination = wallet(globex, SOL), wallet(globex, 1_000_000)
    held = _transfer(globex, source, destination, svmTransactionConfig={"feePayer": {"onchainId": shared["onchainId"]}})
    assert held.status_code == 200 and held.json()["svmTransaction"]["status"] == "PENDING_APPROVAL", held.json()
    tx = Transaction.unscoped.get(offchain_id=held.json()["svmTransaction"]["offchainId"])
    assert tx.tenant_id == other_tenant.pk and tx.fee_payer == shared["onchainId"]


# --- staff see each organization's platform-paid fees -------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_staff_see_each_organizations_platform_paid_fees(api, tenant, other_tenant, client, celery_worker_process, chain):
    from backoffice.tests.staff import client_for, staff_user

    source, destination = wallet(api, SOL), wallet(api, 1_000_000)
    landed = _transfer(api, source, destination)
    assert landed.status_code == 200, landed.json()
    tx = Transaction.unscoped.get(offchain_id=landed.json()["svmTransaction"]["offchainId"])
    spent = fees.platform_fees_spent(tenant, CLUSTER)
    assert spent >= tx.fee > 0
    viewer = client_for(client, staff_user("viewer"))
    page = viewer.get("/admin/transactions/organizationplatformfees/")
    assert page.status_code == 200
    html = page.content.decode()
    assert tenant.external_id in html and other_tenant.external_id in html
    assert f"CHAIN_LOCALNET: {spent:,} lamports" in html
    detail = viewer.get(f"/admin/transactions/organizationplatformfees/{tenant.pk}/change/")
    assert detail.status_code == 200 and f"{spent:,} lamports" in detail.content.decode()
    # Nobody edits it: it is a reading of the transactions.
    assert viewer.post(f"/admin/transactions/organizationplatformfees/{tenant.pk}/change/", {"name": "x"}).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_two_transactions_built_together_do_not_jointly_pass_the_fee_payers_window(api, tenant, monkeypatch, celery_worker_process, chain):
    """The second request builds, then the first is recorded: the second is decided again in
    its write phase, under the fee payer's row lock, and counts the first's fee."""
    from instruments.tests.test_races import inject_after_build
    from positions import transfers

    limits = [{"destinationType": "NON_MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 15_000, "durationHours": 24}]
    payer = wallet(api, SOL, networkCurrencyDebitLimits=limits)
    other, destination = wallet(api, SOL), wallet(api, 1_000_000)
    envelope = {"svmTransactionConfig": {"feePayer": payer}}
    competing = inject_after_build(monkeypatch, transfers, lambda: _transfer(api, other, destination, 2_000, **envelope))
    late = _transfer(api, other, destination, 1_000, **envelope)
    first = competing[0].json()["svmTransaction"]
    assert first["status"] in ("CONFIRMED", "FINALIZED"), first
    assert late.json()["svmTransaction"]["status"] == "PENDING_APPROVAL", late.json()
