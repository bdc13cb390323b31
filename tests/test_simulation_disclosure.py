"""A failed simulation names the failing account and quotes its numbers only when the
account is the caller's own; the platform fee payer's balance is no tenant's business
(docs/errors.md, Chain)."""

from __future__ import annotations

import re

import pytest
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.system_program import TransferParams, transfer

from accounts.custody import managed_key_import
from conftest import assert_error
from transactions import services
from transactions.chain.errors import SimulationFailed
from transactions.fee_payers import platform_fee_payer
from transactions.models import Transaction
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded

pytestmark = [pytest.mark.chain]
CLUSTER = "CHAIN_LOCALNET"


def _prepare(tenant, ix, signers=()):
    with db_transaction.atomic():
        services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", instructions=[ix], signers=signers)


@pytest.mark.django_db(transaction=True)
def test_the_callers_own_account_is_named_with_its_numbers(localnet_url, tenant, chain):
    source = funded(chain, 10**8)
    balance = chain.get_balance(source.pubkey()).value
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**12))
    with pytest.raises(SimulationFailed) as err:
        _prepare(tenant, ix, [SignerSpec(source.pubkey(), managed_key_import(secret=str(source)))])
    assert err.value.status_code == 400 and "insufficient lamports" in err.value.message
    assert str(source.pubkey()) in err.value.message and str(balance) in err.value.message


@pytest.mark.django_db(transaction=True)
def test_the_platform_fee_payers_balance_is_never_quoted(localnet_url, tenant, chain):
    payer = platform_fee_payer(CLUSTER).pubkey
    ix = transfer(TransferParams(from_pubkey=payer, to_pubkey=Keypair().pubkey(), lamports=10**18))
    with pytest.raises(SimulationFailed) as err:
        _prepare(tenant, ix)
    balance = chain.get_balance(payer).value
    assert "insufficient lamports" in err.value.message
    assert str(payer) not in err.value.message and str(balance) not in err.value.message
    assert not re.search(r"\d{6,}", err.value.message), err.value.message
    assert str(balance) in err.value.reason  # kept for the operator's log
    assert Transaction.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_create_account_seed_over_the_funders_balance_hides_the_platform_balance(api, localnet_url, chain):
    payer = platform_fee_payer(CLUSTER).pubkey
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 10**18}}})
    if response.status_code == 400 and response.json()["errors"][0]["code"] == "TRANSACTION_SIMULATION_FAILED":
        message = response.json()["errors"][0]["message"]
        balance = chain.get_balance(payer).value
        assert str(payer) not in message and str(balance) not in message, message
    else:  # a funding rule refused it before simulation: nothing quoted either
        body = assert_error(response, response.status_code)
        assert str(payer) not in str(body) and str(chain.get_balance(payer).value) not in str(body)
