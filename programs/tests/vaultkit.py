"""A loan remittance vault in LiteSVM for the vault program's tests."""

from __future__ import annotations

from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.instructions import TransferCheckedParams, transfer_checked

from instruments.token2022.constants import TOKEN_PROGRAM_ID
from programs.loan_vault import abi
from programs.loan_vault import client as vault_client
from programs.tests.svmkit import Chain, Outcome

E = {e.name: e.code for e in abi.ERRORS}


class VaultWorld:
    """A loan mint issued by ``issuer``, a payment mint under ``token_program``, the vault's
    addresses and its CreateVault instruction (admin ``admin``); ``create()`` sends it. The
    program is loaded at a new id unless ``program`` names one already deployed."""

    def __init__(self, token_program: Pubkey = TOKEN_PROGRAM_ID, *, capacity: int = 4, chain: Chain | None = None, payment_mint: Pubkey | None = None, program: Pubkey | None = None):
        self.chain = c = chain or Chain()
        self.program = program or c.load("loan_vault")
        self.token_program = token_program
        self.issuer = Keypair()
        self.admin = Keypair()
        self.loan_mint = c.mint(program=TOKEN_PROGRAM_ID, authority=self.issuer, decimals=0)
        self.payment_mint = payment_mint or c.mint(program=token_program)
        self.vault = vault_client.VaultAddresses.of(program=self.program, loan_mint=self.loan_mint, payment_mint=self.payment_mint, token_program=token_program)
        self.create_ix = vault_client.create_vault(self.vault, payer=c.payer.pubkey(), loan_mint_authority=self.issuer.pubkey(), admin=self.admin.pubkey(), capacity=capacity)
        self.sequence = 0

    def create(self) -> Outcome:
        return self.chain.ok([self.create_ix], [self.issuer])

    def state(self) -> vault_client.VaultState:
        return vault_client.decode_state(self.chain.data(self.vault.state))

    def account_of(self, owner: Pubkey | None = None, mint: Pubkey | None = None) -> Pubkey:
        """A token account of the payment mint (or ``mint``) for a new owner."""
        return self.chain.token_account(owner or Keypair().pubkey(), mint or self.payment_mint, self.token_program)

    def whitelist(self, destination: Pubkey, *, remove: bool = False) -> Outcome:
        return self.chain.send([vault_client.update_whitelist(self.vault, admin=self.admin.pubkey(), destination=destination, remove=remove)], [self.admin])

    def fund(self, amount: int) -> None:
        self.chain.mint_to(self.payment_mint, self.vault.vault_token, amount, program=self.token_program)

    def repayment_ix(self, destination: Pubkey, amount: int, *, sequence: int | None = None, extra=()) -> Instruction:
        if sequence is None:
            self.sequence += 1
            sequence = self.sequence
        return vault_client.repayment(self.vault, admin=self.admin.pubkey(), destination=destination, amount=amount, sequence=sequence, extra=list(extra))

    def repay(self, destination: Pubkey, amount: int, **kw) -> Outcome:
        return self.chain.send([self.repayment_ix(destination, amount, **kw)], [self.admin])

    def close_ix(self, rent_destination: Pubkey | None = None) -> Instruction:
        return vault_client.close_vault(self.vault, admin=self.admin.pubkey(), rent_destination=rent_destination or self.chain.payer.pubkey())

    def pay_in(self, payer: Keypair, source: Pubkey, amount: int, decimals: int = 6) -> Outcome:
        """The borrower pays into the vault's token account (a plain TransferChecked)."""
        ix = transfer_checked(TransferCheckedParams(program_id=self.token_program, source=source, mint=self.payment_mint, dest=self.vault.vault_token, owner=payer.pubkey(), amount=amount, decimals=decimals))
        return self.chain.ok([ix], [payer])
