"""A vault whose payment instrument is a Token-2022 transfer-hook mint with the project's
allow-list hook: the repayment's TransferChecked (a CPI of the vault program, signed by the
vault authority) carries the hook's extra accounts, and the hook runs inside it — passing
for an allowed lender, refusing another owner with its own error, named in a 400
PROGRAM_ERROR (the innermost program that failed, inside the vault's CPI)."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

import programs
from conftest import assert_error
from positions.tests.movekit import settled, transfer

from .kit import call, details, landed, token_balance, vault_transactions, world

pytestmark = pytest.mark.chain

HOOK = Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS["allowlist_hook"])


@pytest.mark.django_db(transaction=True)
def test_repayments_of_a_hook_mint_pass_the_hook_for_allowed_owners_only(api, celery_worker_process, chain):
    w = world(api, chain, payment_version="TOKEN_2022", hook=HOOK)  # borrower and lender on the allow-list (through the API)
    vault = landed(w.create(api), 201)["newVault"]
    authority = details(api, {"offchainId": vault["offchainId"]})["vaultAuthority"]["onchainId"]
    allow = api.call("patch", "/api/v1/financial-instruments/allow-list/add?wait=confirmed", {"itemData": {"financialInstrument": w.payment, "owners": [{"onchainId": authority, "offPlatform": True}]}})
    assert allow.status_code == 200, allow.json()  # the vault receives
    by_id = {"vault": {"offchainId": vault["offchainId"]}}
    for destination in (w.lender_position, w.borrower_position):
        landed(call(api, "update-whitelist", {**by_id, "action": "ADD", "destination": {"position": {"offchainId": destination["offchainId"]}}}))
    settled(transfer(api, {"position": {"offchainId": w.borrower_position["offchainId"]}}, {"position": {"offchainId": vault["offchainId"]}}, {"lamports": 900}))
    assert token_balance(chain, vault["onchainId"]) == 900

    # The borrower leaves the allow-list: the vault still whitelists the position, the hook no longer does.
    revoke = api.call("patch", "/api/v1/financial-instruments/allow-list/remove?wait=confirmed", {"itemData": {"financialInstrument": w.payment, "owners": [w.borrower]}})
    assert revoke.status_code == 200, revoke.json()
    paid = landed(call(api, "repayment", {**by_id, "destination": {"position": {"offchainId": w.lender_position["offchainId"]}}, "value": {"lamports": 600}}))
    assert paid["sequence"] == 1 and (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (300, 600)
    # Whitelisted by the vault, but its owner is not on the mint's allow-list: the hook refuses.
    before = vault_transactions()
    error = assert_error(call(api, "repayment", {**by_id, "destination": {"position": {"offchainId": w.borrower_position["offchainId"]}}, "value": {"lamports": 1}}), 400, "PROGRAM_ERROR")
    message = error["errors"][0]["message"]
    assert message.startswith("The allowlist_hook program refused the transaction in simulation: DestinationOwnerNotAllowed (custom program error 7030)"), message
    assert vault_transactions() == before and token_balance(chain, vault["onchainId"]) == 300
