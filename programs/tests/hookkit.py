"""A Token-2022 transfer-hook mint under the allow-list hook, in LiteSVM, for the hook's tests."""

from __future__ import annotations

from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from spl.token.instructions import TransferCheckedParams, transfer_checked

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID
from instruments.token2022.transfer_hook import transfer_hook_accounts
from programs.allowlist_hook import abi
from programs.allowlist_hook import client as hook
from programs.tests.svmkit import Chain

E = {e.name: e.code for e in abi.ERRORS}


class HookWorld:
    """A Token-2022 mint whose TransferHook names the program, its allow-list managed by
    ``authority``, and a holder with 1,000 tokens."""

    def __init__(self, capacity: int = 4):
        self.chain = c = Chain()
        self.program = c.load("allowlist_hook")
        self.authority = Keypair()
        self.mint = c.mint(program=TOKEN_2022_PROGRAM_ID, hook=self.program)
        self.init = hook.initialize_allow_list(program=self.program, payer=c.payer.pubkey(), mint=self.mint, mint_authority=c.payer.pubkey(), authority=self.authority.pubkey(), capacity=capacity)
        self.init_outcome = c.ok([self.init])
        self.allow_list = hook.allow_list_address(self.program, self.mint)[0]
        self.validation = hook.validation_address(self.program, self.mint)[0]
        self.holder = Keypair()
        self.source = c.token_account(self.holder.pubkey(), self.mint, TOKEN_2022_PROGRAM_ID)
        c.mint_to(self.mint, self.source, 1000, program=TOKEN_2022_PROGRAM_ID)

    def add(self, owner: Pubkey):
        return self.chain.ok([hook.add_owner(program=self.program, mint=self.mint, authority=self.authority.pubkey(), owner=owner)], [self.authority])

    def transfer_ix(self, destination: Pubkey, amount: int) -> Instruction:
        ix = transfer_checked(TransferCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, source=self.source, mint=self.mint, dest=destination, owner=self.holder.pubkey(), amount=amount, decimals=6))
        # The extra accounts, resolved by the service's own resolver from the validation account.
        extra = transfer_hook_accounts(program=self.program, mint=self.mint, source=self.source, destination=destination, authority=self.holder.pubkey(), amount=amount, fetch=self.chain.data)
        return Instruction(ix.program_id, ix.data, [*ix.accounts, *extra])

    def transfer(self, destination: Pubkey, amount: int):
        return self.chain.send([self.transfer_ix(destination, amount)], [self.holder])

    def execute_ix(self, *, source=None, mint=None, destination=None, validation=None, allow_list=None) -> Instruction:
        """Execute called directly, outside a transfer."""
        accounts = [source or self.source, mint or self.mint, destination or self.source, self.holder.pubkey(), validation or self.validation, allow_list or self.allow_list]
        return Instruction(self.program, abi.ABI.instruction("Execute").encode(amount=1), [AccountMeta(k, False, False) for k in accounts])

    def allowed(self) -> tuple[Pubkey, ...]:
        return hook.decode_allow_list(self.chain.data(self.allow_list)).owners
