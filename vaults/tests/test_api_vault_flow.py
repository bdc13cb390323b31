"""The loan remittance vault through the API on the local node (genesis loan_vault program),
with a real worker: create → whitelist a lender → the borrower pays in with a positions
transfer → repayments to the lender → close; balances confirmed by an unmodified solana-py
client, the program's own accounts decoded from the chain."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account, AccountStatus, AccountType
from conftest import assert_error
from positions.models import Position, PositionStatus
from positions.tests.movekit import settled, transfer
from programs.loan_vault import client
from transactions.models import Transaction
from vaults.models import Vault, VaultStatus

from .kit import address_of, call, details, landed, token_balance, vault_transactions, world

pytestmark = pytest.mark.chain

LOAN_VAULT = Pubkey.from_string("LoanVau1t1111111111111111111111111111111111")


def _state(chain, vault: dict) -> client.VaultState | None:
    account = chain.get_account_info(Pubkey.from_string(vault["whitelistAccount"]["onchainId"])).value
    return client.decode_state(bytes(account.data)) if account is not None else None


@pytest.mark.django_db(transaction=True)
def test_create_whitelist_pay_in_repay_and_close(api, celery_worker_process, chain):
    w = world(api, chain)
    funder = Pubkey.from_string(address_of(api, w.funder))
    funder_before = chain.get_balance(funder).value
    body = landed(w.create(api), 201)
    vault = body["newVault"]
    shown = details(api, {"offchainId": vault["offchainId"]})
    loan_mint, payment_mint = Pubkey.from_string(w.loan["onchainId"]), Pubkey.from_string(w.payment["onchainId"])
    authority = client.authority_address(LOAN_VAULT, loan_mint, payment_mint)[0]
    assert shown["vault"] == vault and shown["status"] == "ACTIVE" and shown["program"]["onchainId"] == str(LOAN_VAULT)
    assert shown["vaultAuthority"]["onchainId"] == str(authority) and shown["vaultAuthority"]["offchainId"]
    assert vault["onchainId"] == str(client.vault_token_address(LOAN_VAULT, loan_mint, payment_mint, Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")))
    # Fetch Vault Details by the pair answers the same.
    assert details(api, {"loanFinancialInstrument": w.loan, "paymentFinancialInstrument": w.payment}) == shown
    # The program's accounts on chain: the token account owned by the PDA, the state by the program.
    token = chain.get_account_info_json_parsed(Pubkey.from_string(vault["onchainId"])).value
    assert token.data.parsed["info"]["owner"] == str(authority) and token_balance(chain, vault["onchainId"]) == 0
    state = _state(chain, shown)
    assert state.admin == w.admin_key.pubkey() and state.capacity == 4 and state.whitelist == () and state.last_sequence == 0
    # Offchain: a FUNDS_TOKEN_ACCOUNT position representing the vault, owned by the VAULT_AUTHORITY record.
    position = Position.unscoped.select_related("account", "owner").get(offchain_id=vault["offchainId"])
    assert position.status == PositionStatus.ACTIVE and position.address == vault["onchainId"]
    assert position.account.type == AccountType.FUNDS_TOKEN_ACCOUNT and position.owner.type == AccountType.VAULT_AUTHORITY and position.owner_address == str(authority)

    added = landed(call(api, "update-whitelist", {"vault": {"onchainId": vault["onchainId"]}, "action": "ADD", "destination": {"position": {"offchainId": w.lender_position["offchainId"]}}}))
    assert added["updatedVault"] == vault and added["destination"] == {"onchainId": w.lender_position["onchainId"], "offchainId": w.lender_position["offchainId"]}
    assert details(api, {"offchainId": vault["offchainId"]})["whitelist"] == [added["destination"]]
    assert _state(chain, shown).whitelist == (Pubkey.from_string(w.lender_position["onchainId"]),)

    # The borrower pays in: an ordinary Transfer Financial Instrument to the vault's position.
    settled(transfer(api, {"position": {"offchainId": w.borrower_position["offchainId"]}}, {"position": {"offchainId": vault["offchainId"]}}, {"lamports": 50_000}))
    assert token_balance(chain, vault["onchainId"]) == 50_000

    to_lender = {"position": {"offchainId": w.lender_position["offchainId"]}}
    first = landed(call(api, "repayment", {"vault": {"offchainId": vault["offchainId"]}, "destination": to_lender, "value": {"amount": "300.00"}}))
    assert first["sequence"] == 1 and first["vault"] == vault
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (20_000, 30_000)
    second = landed(call(api, "repayment", {"vault": {"onchainId": vault["onchainId"]}, "destination": {"owner": w.lender}, "value": {"lamports": 20_000}}))
    assert second["sequence"] == 2 and second["destination"]["offchainId"] == w.lender_position["offchainId"]
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (0, 50_000)
    shown = details(api, {"offchainId": vault["offchainId"]})
    assert shown["lastSequence"] == 2 == _state(chain, shown).last_sequence and shown["balance"] == {"amount": 0, "lamports": 0}
    assert shown["lastTransaction"]["offchainId"] == second["svmTransactionResult"]["offchainId"]

    landed(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "REMOVE", "destination": to_lender}))
    closed = landed(call(api, "close-vault", {"vault": {"offchainId": vault["offchainId"]}}))
    assert closed["closedVault"] == vault
    assert chain.get_account_info(Pubkey.from_string(vault["onchainId"])).value is None and _state(chain, shown) is None
    shown = details(api, {"offchainId": vault["offchainId"]})
    assert shown["status"] == "CLOSED" and shown["closedAt"] and shown["whitelist"] == []
    assert Position.unscoped.get(offchain_id=vault["offchainId"]).status == PositionStatus.INACTIVE
    assert Account.unscoped.get(address=str(authority)).status == AccountStatus.INACTIVE
    # The rent came back to the funder that paid it (less the fees it paid as fee payer).
    assert funder_before - chain.get_balance(funder).value < 100_000

    # A closed vault takes nothing more (the service's record says so first).
    assert_error(call(api, "repayment", {"vault": {"offchainId": vault["offchainId"]}, "destination": to_lender, "value": {"lamports": 1}}), 400, "VAULT_CLOSED", "itemData.vault")
    # The pair can be opened again, in place: same vault, same position, sequences going on.
    reopened = landed(w.create(api), 201)
    assert reopened["newVault"] == vault and Vault.unscoped.get(offchain_id=vault["offchainId"]).status == VaultStatus.ACTIVE
    assert details(api, {"offchainId": vault["offchainId"]})["status"] == "ACTIVE"


@pytest.mark.django_db(transaction=True)
def test_an_external_admin_signs_off_platform(api, celery_worker_process, chain):
    w = world(api, chain, admin_managed=False)
    vault = landed(w.create(api), 201)["newVault"]  # the admin is only recorded at creation: it does not sign
    response = call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD", "destination": {"position": {"offchainId": w.lender_position["offchainId"]}}})
    assert response.status_code == 200 and response.json()["svmTransactionResult"]["status"] == "PARTIALLY_SIGNED", response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransactionResult"]["offchainId"])
    assert str(w.admin_key.pubkey()) in tx.missing_signers
    # Another change waits for this one (the in-flight marker).
    assert_error(call(api, "repayment", {"vault": {"offchainId": vault["offchainId"]}, "destination": {"owner": w.lender}, "value": {"lamports": 1}}), 409, "OPERATION_IN_PROGRESS")
    signature = w.admin_key.sign_message(bytes(tx.message))
    signed = api.call("patch", "/api/v1/transactions/sign?wait=confirmed", {"itemData": {"transaction": {"offchainId": str(tx.offchain_id)},
                                                                                   "offPlatformSigning": [{"account": w.admin, "signature": str(signature)}]}})
    assert signed.status_code == 200 and signed.json()["status"] in ("CONFIRMED", "FINALIZED"), signed.json()
    assert details(api, {"offchainId": vault["offchainId"]})["whitelist"] == [{"onchainId": w.lender_position["onchainId"], "offchainId": w.lender_position["offchainId"]}]


@pytest.mark.django_db(transaction=True)
def test_repayment_to_an_off_platform_lender_is_held_for_approval(api, approver, celery_worker_process, chain):
    """The vault position's debit limits apply (token defaults: nothing to an OFF_PLATFORM
    destination without approval)."""
    from transactions.tests.chainkit import create_ata, funded

    w = world(api, chain)
    vault = landed(w.create(api), 201)["newVault"]
    outsider = Keypair().pubkey()
    payer = funded(chain)
    ata = create_ata(chain, payer, outsider, Pubkey.from_string(w.payment["onchainId"]))
    off_platform = {"owner": {"onchainId": str(outsider), "offPlatform": True}}
    landed(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD", "destination": off_platform}))
    settled(transfer(api, {"position": {"offchainId": w.borrower_position["offchainId"]}}, {"position": {"offchainId": vault["offchainId"]}}, {"lamports": 700}))
    before = vault_transactions()
    response = call(api, "repayment", {"vault": {"offchainId": vault["offchainId"]}, "destination": off_platform, "value": {"lamports": 700}}, wait=False)
    assert response.status_code == 200, response.json()
    result = response.json()["svmTransactionResult"]
    assert result["status"] == "PENDING_APPROVAL" and result["onchainId"] is None and "OFF_PLATFORM" in result["errorMessage"]
    assert response.json()["destination"] == {"onchainId": str(ata), "offchainId": None} and vault_transactions() == before + 1
    assert token_balance(chain, vault["onchainId"]) == 700
    approved = approver.call("patch", "/api/v1/transactions/approve?wait=confirmed", {"itemData": {"transaction": {"offchainId": result["offchainId"]}}})
    assert approved.status_code == 200 and approved.json()["status"] in ("CONFIRMED", "FINALIZED"), approved.json()
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, str(ata))) == (0, 700)


@pytest.mark.django_db(transaction=True)
def test_checks_of_the_service(api, other_api, celery_worker_process, chain):
    w = world(api, chain, loan_kind="CORPORATE_BOND")
    before = vault_transactions()
    assert_error(w.create(api), 400, "NOT_A_LOAN_INSTRUMENT", "itemData.loanFinancialInstrument")
    loan_w = world(api, chain)
    vault = landed(loan_w.create(api), 201)["newVault"]
    assert_error(loan_w.create(api), 409, "VAULT_EXISTS", "itemData")
    # A body naming the destination twice, or a pair by half.
    assert_error(call(api, "update-whitelist", {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD",
                                                "destination": {"position": {"offchainId": loan_w.lender_position["offchainId"]}, "owner": loan_w.lender}}), 400, "CONFLICTING_FIELDS")
    assert_error(call(api, "vault-details", {"loanFinancialInstrument": loan_w.loan}, wait=False), 400, "REQUIRED", "itemData.paymentFinancialInstrument")
    # Another organization's vault is like a missing one.
    for lookup in ({"offchainId": vault["offchainId"]}, {"loanFinancialInstrument": loan_w.loan, "paymentFinancialInstrument": loan_w.payment}):
        hidden = call(other_api, "vault-details", lookup, wait=False)
        assert hidden.status_code == 404, hidden.json()
    assert_error(call(api, "vault-details", {"offchainId": "00000000-0000-4000-8000-000000000000"}, wait=False), 404, "NOT_FOUND", "itemData")
    # Debit API keys of the vault's position need their role.
    assert_error(loan_w.create(api, tokenDebitApiKeys=["someone"]), 403, "MISSING_ROLE", "itemData.tokenDebitApiKeys")
    # The issuer signs the creation: another authority named is refused before building.
    w2 = world(api, chain)
    assert_error(w2.create(api, loanMintAuthority=w2.lender), 400, "AUTHORITY_MISMATCH", "itemData.loanMintAuthority")
    assert vault_transactions() == before + 1
