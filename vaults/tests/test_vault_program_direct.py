"""The loan_vault program at its genesis id on the shared local node, driven directly with
solders transactions through an unmodified solana-py client (no service in between): the
happy path, and each check refusing with the program's own Custom(code) — wrong admin,
non-whitelisted destination, foreign mint, wrong PDA, replay, closed vault — with nothing
moved."""

from __future__ import annotations

import pytest
from solana.rpc.api import Client
from solana.rpc.core import RPCException
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError
from spl.token.constants import TOKEN_PROGRAM_ID

import programs
from programs.loan_vault import abi, client
from transactions.tests.chainkit import create_ata, create_mint, funded, mint_to, send

pytestmark = pytest.mark.chain

LOAN_VAULT = Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS["loan_vault"])
CODE = {e.name: e.code for e in abi.ERRORS}


def refused(chain: Client, payer: Keypair, instruction, signers=()) -> str:
    """Send ``instruction``; it must fail in preflight with a loan_vault error: its name."""
    tx = Transaction([payer, *signers], Message([instruction], payer.pubkey()), chain.get_latest_blockhash().value.blockhash)
    with pytest.raises(RPCException) as failure:
        chain.send_transaction(tx)
    detail = failure.value.args[0].data
    assert any(line.startswith(f"Program {LOAN_VAULT} failed: custom program error") for line in detail.logs), detail.logs
    assert isinstance(detail.err, TransactionErrorInstructionError) and isinstance(detail.err.err, InstructionErrorCustom), detail.err
    return client.error_name(detail.err.err.code)


def balance(chain: Client, address: Pubkey) -> int:
    return int(chain.get_token_account_balance(address).value.amount)


@pytest.fixture
def vault(chain):
    """A vault of a fresh pair at the genesis program, 1,000 base units in it, one lender whitelisted."""
    payer, issuer, admin = funded(chain, 20 * 10**9), Keypair(), Keypair()
    loan = create_mint(chain, payer, decimals=0, authority=issuer.pubkey())
    payment = create_mint(chain, payer, decimals=2)
    v = client.VaultAddresses.of(program=LOAN_VAULT, loan_mint=loan, payment_mint=payment, token_program=TOKEN_PROGRAM_ID)
    send(chain, payer, [client.create_vault(v, payer=payer.pubkey(), loan_mint_authority=issuer.pubkey(), admin=admin.pubkey(), capacity=4)], [issuer], v0=False)
    mint_to(chain, payer, payment, v.vault_token, 1_000, decimals=2)
    lender = create_ata(chain, payer, Keypair().pubkey(), payment)
    send(chain, payer, [client.update_whitelist(v, admin=admin.pubkey(), destination=lender)], [admin], v0=False)
    return chain, payer, admin, issuer, v, lender


def test_a_repayment_pays_a_whitelisted_lender(vault):
    chain, payer, admin, _, v, lender = vault
    send(chain, payer, [client.repayment(v, admin=admin.pubkey(), destination=lender, amount=400, sequence=1)], [admin], v0=False)
    assert (balance(chain, v.vault_token), balance(chain, lender)) == (600, 400)
    state = client.decode_state(bytes(chain.get_account_info(v.state).value.data))
    assert state.last_sequence == 1 and state.whitelist == (lender,) and state.admin == admin.pubkey()


def test_wrong_admin_non_whitelisted_destination_and_foreign_mint(vault):
    chain, payer, admin, issuer, v, lender = vault
    stranger = Keypair()
    assert refused(chain, payer, client.repayment(v, admin=stranger.pubkey(), destination=lender, amount=1, sequence=1), [stranger]) == "AdminMismatch"
    assert refused(chain, payer, client.update_whitelist(v, admin=stranger.pubkey(), destination=lender, remove=True), [stranger]) == "AdminMismatch"
    other = create_ata(chain, payer, Keypair().pubkey(), v.payment_mint)
    assert refused(chain, payer, client.repayment(v, admin=admin.pubkey(), destination=other, amount=1, sequence=1), [admin]) == "DestinationNotWhitelisted"
    # Foreign mint: a token account of another mint cannot be whitelisted, and the vault pays in its own mint only.
    foreign_mint = create_mint(chain, payer, decimals=2)
    foreign = create_ata(chain, payer, Keypair().pubkey(), foreign_mint)
    assert refused(chain, payer, client.update_whitelist(v, admin=admin.pubkey(), destination=foreign), [admin]) == "DestinationWrongMint"
    wrong_mint = client.VaultAddresses(v.program, v.loan_mint, foreign_mint, v.token_program, v.authority, v.state, v.vault_token)
    assert refused(chain, payer, client.repayment(wrong_mint, admin=admin.pubkey(), destination=lender, amount=1, sequence=1), [admin]) == "WrongPaymentMint"
    assert (balance(chain, v.vault_token), balance(chain, lender)) == (1_000, 0)


def test_wrong_pdas(vault):
    chain, payer, admin, issuer, v, lender = vault
    swapped = client.authority_address(LOAN_VAULT, v.payment_mint, v.loan_mint)[0]
    wrong_authority = client.VaultAddresses(v.program, v.loan_mint, v.payment_mint, v.token_program, swapped, v.state, v.vault_token)
    assert refused(chain, payer, client.repayment(wrong_authority, admin=admin.pubkey(), destination=lender, amount=1, sequence=1), [admin]) == "WrongVaultAuthority"
    # Creating a vault whose state is not the pair's PDA (here: the existing vault's, for another pair).
    loan2 = create_mint(chain, payer, decimals=0, authority=issuer.pubkey())
    fresh = client.VaultAddresses.of(program=LOAN_VAULT, loan_mint=loan2, payment_mint=v.payment_mint, token_program=TOKEN_PROGRAM_ID)
    wrong_state = client.VaultAddresses(fresh.program, fresh.loan_mint, fresh.payment_mint, fresh.token_program, fresh.authority, v.state, fresh.vault_token)
    create = client.create_vault(wrong_state, payer=payer.pubkey(), loan_mint_authority=issuer.pubkey(), admin=admin.pubkey(), capacity=4)
    assert refused(chain, payer, create, [issuer]) == "WrongVaultState"
    assert balance(chain, v.vault_token) == 1_000 and chain.get_account_info(fresh.vault_token).value is None


def test_replayed_repayment_is_refused(vault):
    chain, payer, admin, _, v, lender = vault
    repayment = client.repayment(v, admin=admin.pubkey(), destination=lender, amount=100, sequence=5)
    send(chain, payer, [repayment], [admin], v0=False)
    # The same instruction again, in a new transaction (another fee payer, a new blockhash): refused.
    other_payer = funded(chain)
    assert refused(chain, other_payer, repayment, [admin]) == "StaleSequence"
    assert refused(chain, payer, client.repayment(v, admin=admin.pubkey(), destination=lender, amount=100, sequence=4), [admin]) == "StaleSequence"
    assert (balance(chain, v.vault_token), balance(chain, lender)) == (900, 100)
    send(chain, payer, [client.repayment(v, admin=admin.pubkey(), destination=lender, amount=100, sequence=9)], [admin], v0=False)  # gaps are allowed
    assert balance(chain, lender) == 200


def test_closed_vault_refuses_everything(vault):
    chain, payer, admin, _, v, lender = vault
    assert refused(chain, payer, client.close_vault(v, admin=admin.pubkey(), rent_destination=payer.pubkey()), [admin]) == "WhitelistNotEmpty"
    send(chain, payer, [client.repayment(v, admin=admin.pubkey(), destination=lender, amount=1_000, sequence=1)], [admin], v0=False)
    send(chain, payer, [client.update_whitelist(v, admin=admin.pubkey(), destination=lender, remove=True)], [admin], v0=False)
    send(chain, payer, [client.close_vault(v, admin=admin.pubkey(), rent_destination=payer.pubkey())], [admin], v0=False)
    assert chain.get_account_info(v.state).value is None and chain.get_account_info(v.vault_token).value is None
    payer = funded(chain)  # not the very message the fixture sent (same blockhash: a duplicate, not a refusal)
    assert refused(chain, payer, client.update_whitelist(v, admin=admin.pubkey(), destination=lender), [admin]) == "VaultNotFound"
    assert refused(chain, payer, client.repayment(v, admin=admin.pubkey(), destination=lender, amount=1, sequence=2), [admin]) == "VaultNotFound"
    assert refused(chain, payer, client.close_vault(v, admin=admin.pubkey(), rent_destination=payer.pubkey()), [admin]) == "VaultNotFound"
    assert balance(chain, lender) == 1_000
