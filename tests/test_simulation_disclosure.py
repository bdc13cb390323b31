"""A failed simulation names the failing account and quotes its numbers only when the
account is the caller's own — an account record of the acting organization on the
cluster; a signer is not enough (a keyless off-platform signer, another organization's
shared account), and the platform fee payer's balance is no tenant's business
(docs/errors.md, Chain)."""

from __future__ import annotations

import re

import pytest
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from custody.services import managed_key_import
from accounts.tests.factories import AccountFactory
from conftest import assert_error
from transactions import services
from chain.errors import SimulationFailed
from ledger_project.api.errors import api_error
from transactions.fee_payers import platform_fee_payer
from transactions.models import Transaction
from transactions.platform_keys import PlatformKeyRefused
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded, wait

pytestmark = [pytest.mark.chain]
CLUSTER = "CHAIN_LOCALNET"


def _prepare(tenant, ix, signers=()):
    with db_transaction.atomic():
        services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", instructions=[ix], signers=signers)


def _assert_scrubbed(message: str, address, balance: int) -> None:
    assert "insufficient lamports" in message, message
    assert str(address) not in message and str(balance) not in message, message
    assert not re.search(r"\d{6,}", message), message


@pytest.mark.django_db(transaction=True)
def test_the_callers_own_account_is_named_with_its_numbers(localnet_url, tenant, chain):
    source = funded(chain, 10**8)
    key = managed_key_import(secret=str(source))
    AccountFactory(tenant=tenant, address=str(source.pubkey()), managed=True, managed_key=key)
    balance = chain.get_balance(source.pubkey()).value
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**12))
    with pytest.raises(SimulationFailed) as err:
        _prepare(tenant, ix, [SignerSpec(source.pubkey(), key)])
    assert api_error(err.value).status_code == 400 and "insufficient lamports" in err.value.message
    assert str(source.pubkey()) in err.value.message and str(balance) in err.value.message


@pytest.mark.django_db(transaction=True)
def test_a_signer_that_is_not_the_tenants_account_is_scrubbed(localnet_url, tenant, other_tenant, chain):
    """Signing is not owning: a keyless off-platform signer, and an account only another
    organization records (its shared account), are not the caller's to read about."""
    foreign = funded(chain, 10**8)
    balance = chain.get_balance(foreign.pubkey()).value
    ix = transfer(TransferParams(from_pubkey=foreign.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**12))
    with pytest.raises(SimulationFailed) as err:
        _prepare(tenant, ix, [SignerSpec(foreign.pubkey(), None)])  # off-platform: no key here
    _assert_scrubbed(err.value.message, foreign.pubkey(), balance)
    key = managed_key_import(secret=str(foreign))
    AccountFactory(tenant=other_tenant, address=str(foreign.pubkey()), managed=True, managed_key=key, shared_across_tenants=True)
    with pytest.raises(SimulationFailed) as err:
        _prepare(tenant, ix, [SignerSpec(foreign.pubkey(), key)])
    _assert_scrubbed(err.value.message, foreign.pubkey(), balance)
    assert str(balance) in err.value.reason  # kept for the operator's log


@pytest.mark.django_db(transaction=True)
def test_the_platform_fee_payers_balance_is_never_quoted(localnet_url, tenant, chain):
    payer = platform_fee_payer(CLUSTER).pubkey
    ix = transfer(TransferParams(from_pubkey=payer, to_pubkey=Keypair().pubkey(), lamports=10**18))
    # A message spending the fee payer never reaches the simulation now: the signing check
    # refuses it first (docs/custody.md, "Platform keys"), and says nothing of its balance.
    with pytest.raises(PlatformKeyRefused) as err:
        _prepare(tenant, ix)
    balance = chain.get_balance(payer).value
    assert str(balance) not in err.value.message
    assert Transaction.unscoped.count() == 0


def _managed_account(client, chain, lamports: int, **item) -> str:
    """A managed account created through the API (no seed: no transaction), then funded on chain."""
    response = client.call("post", "/api/v1/accounts", {"itemData": {"managed": True, **item}})
    assert response.status_code == 201, response.json()
    address = response.json()["newAccount"]["onchainId"]
    wait(chain, chain.request_airdrop(Pubkey.from_string(address), lamports).value)
    return address


SEED_OVER_BALANCE = {"managed": True, "seed": {"lamports": 10**12}}


@pytest.mark.django_db(transaction=True)
def test_create_account_seed_over_the_funders_balance_names_the_tenants_own_funder(api, localnet_url, chain):
    funder = _managed_account(api, chain, 2_000_000, offchainReferences={"code": "FUNDER"})
    response = api.call("post", "/api/v1/accounts", {"itemData": SEED_OVER_BALANCE, "svmTransactionConfig": {"feePayer": {"onchainId": funder}}})
    body = assert_error(response, 400, "TRANSACTION_SIMULATION_FAILED")
    message = body["errors"][0]["message"]
    assert funder in message and re.search(r"insufficient lamports \d{6,}", message), message
    assert str(platform_fee_payer(CLUSTER).pubkey) not in message


@pytest.mark.django_db(transaction=True)
def test_create_account_seed_over_a_shared_funders_balance_is_scrubbed(api, other_api, localnet_url, chain):
    """The funder is another organization's shared account this one may sign with: its
    balance is not the caller's business."""
    shared = _managed_account(api, chain, 2_000_000, shareAcrossTenants=True, orgsAllowedToSignWithPrivateKey=["GLOBEX"])
    response = other_api.call("post", "/api/v1/accounts", {"itemData": SEED_OVER_BALANCE, "svmTransactionConfig": {"feePayer": {"onchainId": shared}}})
    body = assert_error(response, 400, "TRANSACTION_SIMULATION_FAILED")
    _assert_scrubbed(body["errors"][0]["message"], shared, chain.get_balance(Pubkey.from_string(shared)).value)


def test_the_failing_programs_own_message_is_the_reason():
    """Token-2022 logs some reasons without "Error:" (a paused mint); the reason is then
    the failing program's last own message — not a nested program's, not its
    "Instruction:" line, not an earlier instruction's."""
    from chain.errors import reason_from_logs

    token = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
    paused = [
        "Program ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL invoke [1]", "Program log: CreateIdempotent",
        "Program ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL success",
        f"Program {token} invoke [1]", "Program log: Instruction: TransferChecked",
        "Program log: Transferring, minting, and burning is paused on this mint",
        f"Program {token} consumed 1590 of 200000 compute units", f"Program {token} failed: custom program error: 0x43",
    ]
    assert reason_from_logs(paused, None) == "Transferring, minting, and burning is paused on this mint"
    nested = [
        f"Program {token} invoke [1]", "Program log: Instruction: TransferChecked",
        "Program Hook111111111111111111111111111111111111 invoke [2]", "Program log: hook says no",
        "Program Hook111111111111111111111111111111111111 failed: custom program error: 0x1",
        f"Program {token} failed: custom program error: 0x1",
    ]
    assert reason_from_logs(nested, None) == "hook says no"
    quiet = [f"Program {token} invoke [1]", "Program log: Instruction: MintToChecked", f"Program {token} failed: custom program error: 0x5"]
    assert reason_from_logs(quiet, None) == "custom program error: 0x5"
