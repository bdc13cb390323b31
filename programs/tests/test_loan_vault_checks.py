"""One negative test per check of the loan remittance vault program (wrong admin,
non-whitelisted destination, foreign mint, wrong PDA, closed vault, replay, missing
signer, wrong owner…), each failing with the program's own error
(programs/loan_vault/abi.py), and nothing changed."""

from __future__ import annotations

import pytest
from solders.account import Account
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.loan_vault import abi
from programs.loan_vault import client as vault_client
from programs.tests.svmkit import set_rent_threshold, unsigned, with_account
from programs.tests.vaultkit import E, VaultWorld

ATA_PROGRAM = vault_client.ASSOCIATED_TOKEN_PROGRAM
CREATE = abi.ABI.instruction("CreateVault")
REPAY = abi.ABI.instruction("Repayment")
CLOSE = abi.ABI.instruction("CloseVault")


def meta(key: Pubkey, writable: bool = False, signer: bool = False) -> AccountMeta:
    return AccountMeta(key, is_signer=signer, is_writable=writable)


@pytest.fixture
def ready():
    """A created vault holding 1,000 with one whitelisted lender."""
    w = VaultWorld()
    w.create()
    w.lender = w.account_of()
    w.whitelist(w.lender)
    w.fund(1_000)
    return w


def refused(w: VaultWorld, ix: Instruction, error: str, signers=None) -> None:
    """``ix`` fails with the vault's ``error`` and the vault is as it was."""
    before = (w.chain.data(w.vault.state), w.chain.data(w.vault.vault_token))
    outcome = w.chain.send([ix], [w.admin, w.issuer] if signers is None else signers)
    assert outcome.custom == E[error], (outcome.error, outcome.logs)
    assert (w.chain.data(w.vault.state), w.chain.data(w.vault.vault_token)) == before


# --- framing ------------------------------------------------------------------------------------


def test_unknown_or_misframed_instructions_are_refused(ready):
    w = ready
    accounts = list(w.create_ix.accounts)
    for data in (b"", bytes([4]), bytes([0, 0, 0]), bytes([2]) + bytes(8), bytes([1]), bytes([3, 0])):
        refused(w, Instruction(w.program, data, accounts), "InvalidInstruction")
    refused(w, Instruction(w.program, w.create_ix.data, accounts[:10]), "NotEnoughAccounts")
    refused(w, Instruction(w.program, bytes([3]), [meta(Pubkey.new_unique()) for _ in range(17)]), "TooManyAccounts")


# --- CreateVault ----------------------------------------------------------------------------------


def test_create_needs_a_signing_writable_payer():
    w = VaultWorld()
    other = w.chain.funded()
    refused(w, with_account(w.create_ix, 0, meta(other.pubkey(), writable=True)), "PayerNotSigner")
    refused(w, with_account(w.create_ix, 0, meta(other.pubkey(), signer=True)), "PayerNotWritable", [w.issuer, other])


@pytest.mark.parametrize("name,key,error", [
    ("system_program", TOKEN_PROGRAM_ID, "WrongSystemProgram"),
    ("token_program", ATA_PROGRAM, "WrongTokenProgram"),
    ("associated_token_program", TOKEN_PROGRAM_ID, "WrongAssociatedTokenProgram"),
])
def test_create_checks_the_programs_it_calls(name, key, error):
    w = VaultWorld()
    refused(w, with_account(w.create_ix, CREATE.account_index(name), meta(key)), error)


def test_create_checks_the_mints():
    w = VaultWorld()
    token_account = w.account_of(mint=w.payment_mint)
    refused(w, with_account(w.create_ix, CREATE.account_index("loan_mint"), meta(token_account)), "LoanMintInvalid")
    spl_payment = VaultWorld(TOKEN_2022_PROGRAM_ID)  # payment mint of Token-2022 ...
    ix = with_account(spl_payment.create_ix, CREATE.account_index("token_program"), meta(TOKEN_PROGRAM_ID))  # ... said to be SPL Token's
    refused(spl_payment, ix, "PaymentMintInvalid")
    same = with_account(w.create_ix, CREATE.account_index("payment_mint"), meta(w.loan_mint))
    refused(w, same, "SameMint")


def test_only_the_loan_issuer_opens_its_vault():
    w = VaultWorld()
    impostor = Keypair()
    ix = with_account(w.create_ix, CREATE.account_index("loan_mint_authority"), meta(impostor.pubkey(), signer=True))
    refused(w, ix, "LoanMintAuthorityMismatch", [impostor])
    refused(w, unsigned(w.create_ix, w.issuer.pubkey()), "LoanMintAuthorityNotSigner", [])


def test_create_refuses_a_zero_admin_and_a_bad_capacity():
    w = VaultWorld()
    refused(w, with_account(w.create_ix, CREATE.account_index("admin"), meta(Pubkey.default())), "ZeroAdmin")
    for capacity in (0, abi.MAX_CAPACITY + 1):
        ix = Instruction(w.program, CREATE.encode(capacity=capacity), w.create_ix.accounts)
        refused(w, ix, "InvalidCapacity")


@pytest.mark.parametrize("name,writable,error", [
    ("authority", False, "WrongVaultAuthority"),
    ("state", True, "WrongVaultState"),
    ("vault_token", True, "WrongVaultTokenAccount"),
])
def test_create_checks_every_derived_address(name, writable, error):
    w = VaultWorld()
    refused(w, with_account(w.create_ix, CREATE.account_index(name), meta(Pubkey.new_unique(), writable=writable)), error)


@pytest.mark.parametrize("name,error", [("state", "StateNotWritable"), ("vault_token", "VaultTokenNotWritable")])
def test_create_needs_the_state_and_token_account_writable(name, error):
    w = VaultWorld()
    index = CREATE.account_index(name)
    refused(w, with_account(w.create_ix, index, meta(w.create_ix.accounts[index].pubkey)), error)


def test_a_vault_is_created_once(ready):
    refused(ready, ready.create_ix, "VaultAlreadyExists")


def test_create_refuses_a_rent_threshold_it_cannot_apply_exactly():
    w = VaultWorld()
    set_rent_threshold(w.chain, 1.7)
    refused(w, w.create_ix, "RentUnavailable")


# --- the vault state, its admin (every instruction after creation) ----------------------------


def instructions(w: VaultWorld, admin: Pubkey) -> list[Instruction]:
    return [
        vault_client.update_whitelist(w.vault, admin=admin, destination=w.account_of()),
        vault_client.repayment(w.vault, admin=admin, destination=w.lender, amount=1, sequence=99),
        vault_client.close_vault(w.vault, admin=admin, rent_destination=w.chain.payer.pubkey()),
    ]


def test_the_state_must_be_the_programs_vault(ready):
    w = ready
    forged = Pubkey.new_unique()
    w.chain.svm.set_account(forged, Account(10**9, bytes(abi.state_size(4)), w.program, False, 0))  # the program's, but no vault
    for ix in instructions(w, w.admin.pubkey()):
        refused(w, with_account(ix, 0, meta(w.vault.vault_token, writable=True)), "StateWrongOwner")
        refused(w, with_account(ix, 0, meta(forged, writable=True)), "StateInvalid")
        refused(w, with_account(ix, 0, meta(w.vault.state)), "StateNotWritable")


def test_every_instruction_needs_the_admin_signature(ready):
    w = ready
    impostor = Keypair()
    for ix in instructions(w, impostor.pubkey()):
        refused(w, ix, "AdminMismatch", [impostor])
    for ix in instructions(w, w.admin.pubkey()):
        refused(w, unsigned(ix, w.admin.pubkey()), "AdminNotSigner", [])


def test_a_closed_vault_is_gone(ready):
    w = ready
    w.repay(w.lender, 1_000)
    w.whitelist(w.lender, remove=True)
    w.chain.ok([w.close_ix()], [w.admin])
    for ix in instructions(w, w.admin.pubkey()):
        outcome = w.chain.send([ix], [w.admin])
        assert outcome.custom == E["VaultNotFound"]


# --- UpdateWhitelist ------------------------------------------------------------------------------


def test_update_checks_the_action(ready):
    w = ready
    ix = vault_client.update_whitelist(w.vault, admin=w.admin.pubkey(), destination=w.lender)
    refused(w, Instruction(w.program, bytes([1, 2]), ix.accounts), "InvalidAction")


def test_only_token_accounts_of_the_payment_mint_are_whitelisted(ready):
    w = ready

    def add(destination: Pubkey) -> Instruction:
        return vault_client.update_whitelist(w.vault, admin=w.admin.pubkey(), destination=destination)

    refused(w, add(Keypair().pubkey()), "DestinationNotTokenAccount")  # no account at all
    refused(w, add(w.payment_mint), "DestinationNotTokenAccount")  # a mint, same program
    t22_mint = w.chain.mint(program=TOKEN_2022_PROGRAM_ID)
    refused(w, add(w.chain.token_account(Keypair().pubkey(), t22_mint, TOKEN_2022_PROGRAM_ID)), "DestinationNotTokenAccount")  # another program's
    foreign_mint = w.chain.mint(program=TOKEN_PROGRAM_ID)
    refused(w, add(w.account_of(mint=foreign_mint)), "DestinationWrongMint")
    refused(w, add(w.vault.vault_token), "DestinationIsVault")
    refused(w, add(w.lender), "AlreadyWhitelisted")


def test_the_whitelist_has_a_capacity_and_removes_only_what_it_holds():
    w = VaultWorld(capacity=1)
    w.create()
    w.whitelist(w.account_of())
    refused(w, vault_client.update_whitelist(w.vault, admin=w.admin.pubkey(), destination=w.account_of()), "WhitelistFull")
    missing = vault_client.update_whitelist(w.vault, admin=w.admin.pubkey(), destination=Keypair().pubkey(), remove=True)
    refused(w, missing, "WhitelistEntryMissing")


# --- Repayment ---------------------------------------------------------------------------------


def test_a_replayed_repayment_is_refused(ready):
    w = ready
    ix = w.repayment_ix(w.lender, 100)
    w.chain.ok([ix], [w.admin])
    refused(w, ix, "StaleSequence")  # the same instruction in a new transaction
    refused(w, w.repayment_ix(w.lender, 100, sequence=w.sequence - 1), "StaleSequence")
    assert w.chain.balance(w.lender) == 100


def test_repayment_goes_only_to_a_writable_whitelisted_destination(ready):
    w = ready
    refused(w, w.repayment_ix(w.account_of(), 100), "DestinationNotWhitelisted")
    ix = w.repayment_ix(w.lender, 100)
    index = REPAY.account_index("destination")
    refused(w, with_account(ix, index, meta(w.lender)), "DestinationNotWritable")


def test_repayment_checks_the_mint_the_pda_and_the_vault_accounts(ready):
    w = ready
    ix = w.repayment_ix(w.lender, 100)
    other = VaultWorld(chain=w.chain)  # another vault of the same program
    other.create()
    foreign_mint = w.chain.mint(program=TOKEN_PROGRAM_ID)
    cases = [
        ("payment_mint", meta(foreign_mint), "WrongPaymentMint"),
        ("authority", meta(other.vault.authority), "WrongVaultAuthority"),
        ("vault_token", meta(other.vault.vault_token, writable=True), "WrongVaultTokenAccount"),
        ("vault_token", meta(w.vault.vault_token), "VaultTokenNotWritable"),
        ("token_program", meta(TOKEN_2022_PROGRAM_ID), "WrongTokenProgram"),
    ]
    for name, replacement, error in cases:
        refused(w, with_account(ix, REPAY.account_index(name), replacement), error)


def test_repayment_refuses_a_zero_amount_and_too_many_extra_accounts(ready):
    w = ready
    refused(w, w.repayment_ix(w.lender, 0), "ZeroAmount")
    extra = [meta(Pubkey.new_unique()) for _ in range(abi.MAX_EXTRA_ACCOUNTS + 1)]
    refused(w, w.repayment_ix(w.lender, 1, extra=extra), "TooManyExtraAccounts")


# --- CloseVault ----------------------------------------------------------------------------------


def test_closing_needs_an_empty_whitelist_and_a_zero_balance(ready):
    w = ready
    refused(w, w.close_ix(), "WhitelistNotEmpty")
    w.whitelist(w.lender, remove=True)
    refused(w, w.close_ix(), "VaultNotEmpty")


def test_closing_sends_the_rent_to_a_writable_outside_destination(ready):
    w = ready
    w.repay(w.lender, 1_000)
    w.whitelist(w.lender, remove=True)
    index = CLOSE.account_index("rent_destination")
    refused(w, with_account(w.close_ix(), index, meta(Keypair().pubkey())), "RentDestinationNotWritable")
    for inside in (w.vault.state, w.vault.vault_token):
        refused(w, w.close_ix(inside), "InvalidRentDestination")
    refused(w, with_account(w.close_ix(), CLOSE.account_index("authority"), meta(Pubkey.new_unique())), "WrongVaultAuthority")
    refused(w, with_account(w.close_ix(), CLOSE.account_index("token_program"), meta(TOKEN_2022_PROGRAM_ID)), "WrongTokenProgram")
