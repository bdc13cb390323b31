"""The loan remittance vault program in LiteSVM: the whole flow (create → whitelist →
borrower pays in → repayment to a whitelisted lender → close) with SPL Token and Token-2022
payment mints and with a transfer-hook payment mint; what Python encodes is what the
program acts on, and what the program writes is what Python decodes."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from instruments.token2022.transfer_hook import transfer_hook_accounts
from programs.allowlist_hook import abi as hook_abi
from programs.allowlist_hook import client as hook_client
from programs.loan_vault import abi
from programs.loan_vault import client as vault_client
from programs.tests.svmkit import Chain, set_rent_threshold
from programs.tests.vaultkit import VaultWorld

TOKEN_PROGRAMS = pytest.mark.parametrize("token_program", [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID], ids=["spl-token", "token-2022"])


@TOKEN_PROGRAMS
def test_the_vault_flow_from_creation_to_closing(token_program):
    w = VaultWorld(token_program)
    c = w.chain
    w.create()
    lender = w.account_of()
    assert w.whitelist(lender).ok

    borrower = Keypair()
    borrower_account = w.account_of(borrower.pubkey())
    c.mint_to(w.payment_mint, borrower_account, 1_000, program=token_program)
    w.pay_in(borrower, borrower_account, 1_000)
    assert c.balance(w.vault.vault_token) == 1_000

    assert w.repay(lender, 600).ok
    assert w.repay(lender, 400).ok
    assert (c.balance(lender), c.balance(w.vault.vault_token)) == (1_000, 0)

    assert w.whitelist(lender, remove=True).ok
    rent_destination = Keypair().pubkey()
    rents = c.account(w.vault.state).lamports + c.account(w.vault.vault_token).lamports
    c.ok([w.close_ix(rent_destination)], [w.admin])
    assert c.account(w.vault.state) is None and c.account(w.vault.vault_token) is None
    assert c.svm.get_balance(rent_destination) == rents


def test_what_create_vault_records_is_what_python_encoded_and_derives():
    w = VaultWorld(TOKEN_2022_PROGRAM_ID, capacity=7)
    w.create()
    state = w.state()
    v = w.vault
    assert (state.loan_mint, state.payment_mint, state.admin) == (w.loan_mint, w.payment_mint, w.admin.pubkey())
    assert (state.vault_token, state.token_program, state.capacity) == (v.vault_token, TOKEN_2022_PROGRAM_ID, 7)
    assert state.authority_bump == vault_client.authority_address(w.program, w.loan_mint, w.payment_mint)[1]
    assert state.state_bump == vault_client.state_address(w.program, w.loan_mint, w.payment_mint)[1]
    assert (state.last_sequence, state.whitelist) == (0, ())
    account = w.chain.account(v.state)
    assert account.owner == w.program and len(account.data) == abi.state_size(7)
    assert account.lamports == w.chain.svm.minimum_balance_for_rent_exemption(abi.state_size(7))
    token = w.chain.data(v.vault_token)
    assert token[0:32] == bytes(w.payment_mint) and token[32:64] == bytes(v.authority)  # owned by the PDA
    assert w.chain.account(v.vault_token).owner == TOKEN_2022_PROGRAM_ID


def test_a_repayment_moves_the_encoded_amount_and_records_the_encoded_sequence():
    w = VaultWorld()
    w.create()
    lenders = [w.account_of() for _ in range(3)]
    for lender in lenders:
        w.whitelist(lender)
    assert w.state().whitelist == tuple(lenders)
    w.fund(1_000)
    assert w.repay(lenders[1], 123, sequence=42).ok
    assert (w.chain.balance(lenders[1]), w.chain.balance(w.vault.vault_token)) == (123, 877)
    assert w.state().last_sequence == 42
    assert w.repay(lenders[2], 1, sequence=1_000_000).ok  # gaps are allowed: only order matters
    assert w.state().last_sequence == 1_000_000
    w.whitelist(lenders[0], remove=True)
    assert w.state().whitelist == (lenders[2], lenders[1])


def test_an_address_funded_beforehand_does_not_block_a_vault():
    w = VaultWorld()
    w.chain.set_lamports(w.vault.state, 5_000)
    w.chain.token_account(w.vault.authority, w.payment_mint)  # anyone may create the PDA's associated account first
    w.create()
    assert w.state().capacity == 4


def test_a_transfer_hook_payment_mint_pays_allowed_lenders_only():
    """The vault forwards the hook's extra accounts to TransferChecked: Token-2022 runs the
    allow-list hook inside the vault's CPI."""
    c = Chain()
    hook = c.load("allowlist_hook")
    payment_mint = c.mint(program=TOKEN_2022_PROGRAM_ID, hook=hook)
    hook_authority = Keypair()
    c.ok([hook_client.initialize_allow_list(program=hook, payer=c.payer.pubkey(), mint=payment_mint, mint_authority=c.payer.pubkey(), authority=hook_authority.pubkey(), capacity=4)])
    w = VaultWorld(TOKEN_2022_PROGRAM_ID, chain=c, payment_mint=payment_mint)
    w.create()
    allowed_owner, other_owner = Keypair().pubkey(), Keypair().pubkey()
    allowed, other = w.account_of(allowed_owner), w.account_of(other_owner)
    c.ok([hook_client.add_owner(program=hook, mint=payment_mint, authority=hook_authority.pubkey(), owner=allowed_owner)], [hook_authority])
    w.whitelist(allowed)
    w.whitelist(other)  # whitelisted by the vault, but not allowed by the mint's hook
    w.fund(500)

    def extra(destination, amount):
        return transfer_hook_accounts(program=hook, mint=payment_mint, source=w.vault.vault_token, destination=destination, authority=w.vault.authority, amount=amount, fetch=c.data)

    paid = w.repay(allowed, 200, extra=extra(allowed, 200))
    assert paid.ok, paid.logs
    assert c.balance(allowed) == 200
    refused = w.repay(other, 200, extra=extra(other, 200))
    hook_errors = {e.name: e.code for e in hook_abi.ERRORS}
    assert refused.custom == hook_errors["DestinationOwnerNotAllowed"]
    assert c.balance(other) == 0 and c.balance(w.vault.vault_token) == 300


def test_error_names_come_from_the_abi():
    assert vault_client.error_name(abi.ERROR_BASE + 1) == "InvalidInstruction"
    assert vault_client.error_name(1) is None  # SPL Token's InsufficientFunds is not the vault's
    assert hook_client.error_name(hook_abi.ERROR_BASE + 1) == "InvalidInstruction"
    assert hook_client.error_name(abi.ERROR_BASE + 1) is None  # the vault's range is not the hook's


@pytest.mark.parametrize("threshold", [1.0, 3.5])
def test_the_state_holds_the_runtimes_rent_for_any_exact_threshold(threshold):
    w = VaultWorld()
    set_rent_threshold(w.chain, threshold)
    w.create()
    account = w.chain.account(w.vault.state)
    assert account.lamports == w.chain.svm.get_rent().minimum_balance(len(account.data)) > 0
