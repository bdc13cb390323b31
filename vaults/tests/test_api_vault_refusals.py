"""Every check of the loan_vault program refuses through the API: the simulation at request
time fails with the program's own error, answered 400 PROGRAM_ERROR naming it (and the field
it is about); nothing is recorded and nothing moves. Where the service's records would
refuse first (a closed vault, its addresses, its sequence), the record is made to disagree
with the chain, as a record that has not caught up would, and the program backs it up."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

from conftest import assert_error
from positions.tests.kit import position
from positions.tests.movekit import settled, transfer
from programs.loan_vault import abi, client
from vaults.models import Vault, VaultStatus

from .kit import call, details, landed, token_balance, vault_transactions, world

pytestmark = pytest.mark.chain


def refused(response, name: str, field: str | None = None) -> dict:
    body = assert_error(response, 400, "PROGRAM_ERROR", field)
    code = next(e.code for e in abi.ERRORS if e.name == name)
    message = body["errors"][0]["message"]
    assert message.startswith("The loan_vault program refused the transaction in simulation: ") and f"{name} (custom program error {code})" in message, message
    return body


def funded_vault(api, chain, amount: int = 1_000):
    """A world, its vault with the lender whitelisted, and ``amount`` paid in by the borrower."""
    w = world(api, chain)
    vault = landed(w.create(api), 201)["newVault"]
    landed(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD", "destination": {"position": {"offchainId": w.lender_position["offchainId"]}}}))
    settled(transfer(api, {"position": {"offchainId": w.borrower_position["offchainId"]}}, {"position": {"offchainId": vault["offchainId"]}}, {"lamports": amount}))
    return w, vault


def _repay(api, vault: dict, destination: dict, lamports: int, **item):
    return call(api, "repayment", {"vault": {"offchainId": vault["offchainId"]}, "destination": destination, "value": {"lamports": lamports}, **item})


@pytest.mark.django_db(transaction=True)
def test_wrong_admin_non_whitelisted_destination_and_foreign_mint(api, celery_worker_process, chain):
    w, vault = funded_vault(api, chain)
    lender = {"position": {"offchainId": w.lender_position["offchainId"]}}
    before = vault_transactions()
    # Wrong admin: another managed account of the organization signs (the service signs with it; the program refuses).
    refused(_repay(api, vault, lender, 10, admin=w.issuer), "AdminMismatch", "itemData.admin")
    refused(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "REMOVE", "destination": lender, "admin": w.borrower}), "AdminMismatch", "itemData.admin")
    # A destination that is not whitelisted.
    refused(_repay(api, vault, {"position": {"offchainId": w.borrower_position["offchainId"]}}, 10), "DestinationNotWhitelisted", "itemData.destination")
    refused(_repay(api, vault, {"owner": w.borrower}, 10), "DestinationNotWhitelisted", "itemData.destination")
    # A foreign mint: a token account of the loan instrument cannot be whitelisted.
    foreign = position(api, w.lender, w.loan)
    refused(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD", "destination": {"position": {"offchainId": foreign["offchainId"]}}}),
            "DestinationWrongMint", "itemData.destination")
    # Removing what is not there, adding what is.
    refused(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "REMOVE", "destination": {"owner": w.borrower}}), "WhitelistEntryMissing", "itemData.destination")
    refused(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD", "destination": lender}), "AlreadyWhitelisted", "itemData.destination")
    assert vault_transactions() == before
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (1_000, 0)
    # The right admin, the right destination: it goes through. The three refused repayments
    # were handed sequences 1-3 before their simulation: gaps, which the program allows.
    assert landed(_repay(api, vault, lender, 10))["sequence"] == 4


@pytest.mark.django_db(transaction=True)
def test_wrong_pda_and_replay(api, celery_worker_process, chain):
    w, vault = funded_vault(api, chain)
    lender = {"position": {"offchainId": w.lender_position["offchainId"]}}
    assert landed(_repay(api, vault, lender, 100))["sequence"] == 1
    row = Vault.unscoped.get(offchain_id=vault["offchainId"])
    before = vault_transactions()
    # A record whose vault authority is not the program's PDA for the pair (here: the swapped pair's).
    program, loan, payment = (Pubkey.from_string(a) for a in (row.program_address, w.loan["onchainId"], w.payment["onchainId"]))
    Vault.unscoped.filter(pk=row.pk).update(authority_address=str(client.authority_address(program, payment, loan)[0]))
    refused(_repay(api, vault, lender, 100), "WrongVaultAuthority", "itemData.vault")
    Vault.unscoped.filter(pk=row.pk).update(authority_address=row.authority_address)
    # Replay: a record whose sequence lags the chain builds sequence 1 again; the program refuses it
    # (StaleSequence), the service catches up with the chain, and the next request goes through.
    Vault.unscoped.filter(pk=row.pk).update(last_sequence=0, last_sequence_onchain=0)
    refused(_repay(api, vault, lender, 100), "StaleSequence", "itemData.vault")
    assert vault_transactions() == before and token_balance(chain, vault["onchainId"]) == 900
    assert Vault.unscoped.get(pk=row.pk).last_sequence == 1
    assert landed(_repay(api, vault, lender, 100))["sequence"] == 2
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (800, 200)


@pytest.mark.django_db(transaction=True)
def test_close_preconditions_and_a_closed_vault(api, celery_worker_process, chain):
    w, vault = funded_vault(api, chain, amount=50)
    lender = {"position": {"offchainId": w.lender_position["offchainId"]}}
    by_id = {"vault": {"offchainId": vault["offchainId"]}}
    before = vault_transactions()
    refused(call(api, "close-vault", by_id), "WhitelistNotEmpty", "itemData.vault")
    landed(call(api, "update-whitelist", {**by_id, "action": "REMOVE", "destination": lender}))
    refused(call(api, "close-vault", by_id), "VaultNotEmpty", "itemData.vault")
    assert vault_transactions() == before + 1
    landed(call(api, "update-whitelist", {**by_id, "action": "ADD", "destination": lender}))
    landed(_repay(api, vault, lender, 50))
    landed(call(api, "update-whitelist", {**by_id, "action": "REMOVE", "destination": lender}))
    landed(call(api, "close-vault", by_id))
    assert details(api, by_id["vault"])["status"] == "CLOSED"
    # The service refuses a closed vault itself; a record that missed the close gets the program's answer.
    assert_error(call(api, "update-whitelist", {**by_id, "action": "ADD", "destination": lender}), 400, "VAULT_CLOSED", "itemData.vault")
    Vault.unscoped.filter(offchain_id=vault["offchainId"]).update(status=VaultStatus.ACTIVE)
    after = vault_transactions()
    refused(call(api, "update-whitelist", {**by_id, "action": "ADD", "destination": lender}), "VaultNotFound", "itemData.vault")
    refused(_repay(api, vault, lender, 1), "VaultNotFound", "itemData.vault")
    refused(call(api, "close-vault", by_id), "VaultNotFound", "itemData.vault")
    assert vault_transactions() == after
