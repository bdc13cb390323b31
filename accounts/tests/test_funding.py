"""Who pays (docs/accounts.md): the platform fee payer pays network fees only; a seed or
dataLength rent comes from an account of the tenant under its debit keys and limits."""

from __future__ import annotations

import pytest
from django.db import connection
from solders.pubkey import Pubkey
from solders.signature import Signature

from accounts.models import Account
from accounts.tests.test_api_accounts import create
from conftest import assert_error
from chain.rpc import ChainRpc
from transactions.fee_payers import platform_fee_payer

pytestmark = pytest.mark.chain
FEE_PAYER = "svmTransactionConfig.feePayer"


@pytest.fixture
def no_airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = False


@pytest.fixture
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


@pytest.mark.django_db
def test_seed_without_a_funding_account_is_refused_not_paid_by_the_platform(api, localnet_url, no_airdrop_funding):
    assert_error(create(api, {"managed": True, "seed": {"lamports": 2_000_000}}), 400, "FUNDING_ACCOUNT_REQUIRED", FEE_PAYER)
    assert_error(create(api, {"managed": True, "dataLength": 100}), 400, "FUNDING_ACCOUNT_REQUIRED", FEE_PAYER)
    assert Account.unscoped.count() == 0


@pytest.mark.django_db
def test_seed_of_zero_follows_the_rent_rule_like_any_other_seed(api, localnet_url, airdrop_funding):
    assert_error(create(api, {"managed": True, "seed": {"lamports": 0}}), 400, "SEED_BELOW_RENT", "itemData.seed")
    assert_error(create(api, {"managed": True, "seed": {"lamports": 5}}), 400, "SEED_BELOW_RENT", "itemData.seed")
    assert Account.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_airdrop_funder_pays_the_seed_and_the_platform_only_the_fee(api, celery_worker_process, chain, airdrop_funding):
    platform = platform_fee_payer("CHAIN_LOCALNET").pubkey
    create(api, {"managed": True}, wait=True)  # settle any localnet top-up of the platform payer first
    before = chain.get_balance(platform).value
    response = create(api, {"managed": True, "seed": {"lamports": 40_000_000}}, wait=True)
    assert response.status_code == 201, response.json()
    signature = Signature.from_string(response.json()["svmTransaction"]["onchainId"])
    fee = chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta.fee
    assert before - chain.get_balance(platform).value == fee
    assert chain.get_balance(Pubkey.from_string(response.json()["newAccount"]["onchainId"])).value == 40_000_000


@pytest.mark.django_db(transaction=True)
def test_funding_account_over_its_debit_limit_is_403(api, celery_worker_process, airdrop_funding):
    payer = create(api, {"managed": True, "seed": {"lamports": 50_000_000}, "offchainReferences": {"code": "FUNDS"},
                         "networkCurrencyDebitLimits": [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 3_000_000, "durationHours": 24}]}, wait=True)
    assert payer.status_code == 201, payer.json()
    by_payer = {"feePayer": {"offchainReferences": {"code": "FUNDS"}}}
    assert create(api, {"managed": True, "seed": {"lamports": 2_000_000}}, svmTransactionConfig=by_payer).status_code == 201
    # The 24 h window already holds 2_000_000: 1_500_000 more is over the 3_000_000 limit.
    assert_error(create(api, {"managed": True, "seed": {"lamports": 1_500_000}}, svmTransactionConfig=by_payer), 403, "DEBIT_LIMIT_EXCEEDED", FEE_PAYER)
    Account.unscoped.filter(code="FUNDS").update(network_currency_debit_api_keys=["some-other-key"])
    assert_error(create(api, {"managed": True, "seed": {"lamports": 900_000}}, svmTransactionConfig=by_payer), 403, "DEBIT_NOT_ALLOWED", FEE_PAYER)
    assert Account.unscoped.count() == 2


@pytest.mark.django_db(transaction=True)
def test_network_calls_run_outside_any_database_transaction(api, celery_worker_process, airdrop_funding, monkeypatch):
    seen = []
    real = ChainRpc.simulate

    def simulate(self, transaction, **kwargs):
        seen.append(connection.in_atomic_block)
        return real(self, transaction, **kwargs)

    monkeypatch.setattr(ChainRpc, "simulate", simulate)
    response = create(api, {"managed": True, "seed": {"lamports": 2_000_000}}, request_id="6f1d2c3b-8a4e-4f00-9c1d-000000000001")
    assert response.status_code == 201, response.json()
    assert seen == [False]
