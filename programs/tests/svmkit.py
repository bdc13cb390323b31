"""In-process SVM for the programs' tests: solders' LiteSVM with the real SPL Token,
Token-2022 and Associated Token Account programs built in, the project's programs loaded
from their committed ``.so`` files, and small helpers to send transactions and read the
outcome (a program's custom error, compute units)."""

from __future__ import annotations

from dataclasses import dataclass

from solders.account import Account
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from solders.transaction_metadata import FailedTransactionMetadata
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError
from spl.token.instructions import (
    MintToCheckedParams,
    create_idempotent_associated_token_account,
    get_associated_token_address,
    mint_to_checked,
)

from instruments.token2022 import instructions as t22
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, ExtensionType
from instruments.token2022.sizes import mint_space
from programs import ROOT

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")


def program_bytes(name: str) -> bytes:
    return (ROOT / name / f"{name}.so").read_bytes()


def new_svm():
    """The runtime the local node assembles (localnet/node.py): LiteSVM 0.27.1's
    full configuration cannot reallocate Token-2022 mints, this one runs Token-2022 right."""
    from solders.litesvm import LiteSVM

    return (
        LiteSVM.default().with_sysvars().with_builtins().with_default_programs()
        .with_sigverify(True).with_transaction_history(0).with_blockhash_check(False)
    )


@dataclass
class Outcome:
    ok: bool
    compute_units: int
    logs: list[str]
    error: object  # the TransactionError when it failed

    @property
    def custom(self) -> int | None:
        """The failing instruction's Custom(n) code, if that is how it failed."""
        if isinstance(self.error, TransactionErrorInstructionError) and isinstance(self.error.err, InstructionErrorCustom):
            return self.error.err.code
        return None

    @property
    def instruction(self) -> int | None:
        """Index of the failing instruction."""
        return self.error.index if isinstance(self.error, TransactionErrorInstructionError) else None


class Chain:
    """One LiteSVM with a funded payer; ``send`` signs with the payer and ``signers``."""

    def __init__(self):
        self.svm = new_svm()
        self.payer = self.funded()

    def funded(self, lamports: int = 100 * 10**9) -> Keypair:
        keypair = Keypair()
        self.set_lamports(keypair.pubkey(), lamports)
        return keypair

    def set_lamports(self, address: Pubkey, lamports: int) -> None:
        self.svm.set_account(address, Account(lamports, b"", SYSTEM_PROGRAM, False, 0))

    def load(self, name: str, program_id: Pubkey | None = None) -> Pubkey:
        program_id = program_id or Pubkey.new_unique()
        self.svm.add_program(program_id, program_bytes(name))
        return program_id

    def send(self, instructions: list[Instruction], signers=(), *, payer: Keypair | None = None) -> Outcome:
        payer = payer or self.payer
        message = Message(instructions, payer.pubkey())
        # Sign with whichever of ``signers`` the message asks for (negative tests drop
        # signer flags from instructions and keep the same signer list).
        required = set(message.account_keys[:message.header.num_required_signatures])
        unique = {payer.pubkey(): payer}
        for s in signers:
            if s.pubkey() in required:
                unique.setdefault(s.pubkey(), s)
        # A fresh blockhash per transaction: the same instructions sent twice are two
        # transactions (a replay the programs themselves must refuse), not a duplicate.
        self.svm.expire_blockhash()
        tx = Transaction(list(unique.values()), message, self.svm.latest_blockhash())
        result = self.svm.send_transaction(tx)
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            return Outcome(False, meta.compute_units_consumed(), list(meta.logs()), result.err())
        return Outcome(True, result.compute_units_consumed(), list(result.logs()), None)

    def ok(self, instructions: list[Instruction], signers=(), **kw) -> Outcome:
        outcome = self.send(instructions, signers, **kw)
        assert outcome.ok, f"{outcome.error}\n" + "\n".join(outcome.logs)
        return outcome

    def data(self, address: Pubkey) -> bytes | None:
        account = self.svm.get_account(address)
        return bytes(account.data) if account is not None else None

    def account(self, address: Pubkey):
        return self.svm.get_account(address)

    # --- tokens -----------------------------------------------------------------------------
    def mint(self, *, decimals: int = 6, program: Pubkey = TOKEN_PROGRAM_ID, authority: Keypair | None = None, hook: Pubkey | None = None) -> Pubkey:
        """A new mint (Token-2022 with a TransferHook naming ``hook`` when given), encoded
        with the project's instruments/token2022 encoders."""
        mint = Keypair()
        authority = authority or self.payer
        extensions = {ExtensionType.TRANSFER_HOOK} if hook is not None else set()
        if hook is not None and program != TOKEN_2022_PROGRAM_ID:
            raise ValueError("transfer hooks are a Token-2022 extension")
        space = mint_space(extensions)
        ixs = [create_account(CreateAccountParams(from_pubkey=self.payer.pubkey(), to_pubkey=mint.pubkey(), lamports=self.svm.minimum_balance_for_rent_exemption(space), space=space, owner=program))]
        if hook is not None:
            ixs.append(t22.initialize_transfer_hook(mint=mint.pubkey(), authority=authority.pubkey(), program_id=hook))
        ixs.append(t22.initialize_mint2(mint=mint.pubkey(), decimals=decimals, mint_authority=authority.pubkey(), freeze_authority=None, program=program))
        self.ok(ixs, [mint])
        return mint.pubkey()

    def token_account(self, owner: Pubkey, mint: Pubkey, program: Pubkey = TOKEN_PROGRAM_ID) -> Pubkey:
        self.ok([create_idempotent_associated_token_account(self.payer.pubkey(), owner, mint, program)])
        return get_associated_token_address(owner, mint, program)

    def mint_to(self, mint: Pubkey, destination: Pubkey, amount: int, *, decimals: int = 6, program: Pubkey = TOKEN_PROGRAM_ID, authority: Keypair | None = None) -> None:
        authority = authority or self.payer
        self.ok([mint_to_checked(MintToCheckedParams(program_id=program, mint=mint, dest=destination, mint_authority=authority.pubkey(), amount=amount, decimals=decimals))], [authority])

    def balance(self, token_account: Pubkey) -> int:
        data = self.data(token_account)
        assert data is not None, f"{token_account} does not exist"
        return int.from_bytes(data[64:72], "little")


# --- shaping instructions for negative tests ---------------------------------------------------


def with_account(ix: Instruction, index: int, meta: AccountMeta) -> Instruction:
    """``ix`` with its account ``index`` replaced."""
    accounts = list(ix.accounts)
    accounts[index] = meta
    return Instruction(ix.program_id, ix.data, accounts)


def unsigned(ix: Instruction, key: Pubkey, index: int | None = None) -> Instruction:
    """``ix`` with ``key`` (or only its account ``index``) no longer marked as a signer."""
    accounts = [
        AccountMeta(m.pubkey, is_signer=False, is_writable=m.is_writable) if m.pubkey == key and (index is None or i == index) else m
        for i, m in enumerate(ix.accounts)
    ]
    return Instruction(ix.program_id, ix.data, accounts)


def set_rent_threshold(chain: Chain, threshold: float) -> None:
    from solders.rent import Rent

    rent = chain.svm.get_rent()
    chain.svm.set_rent(Rent(rent.lamports_per_byte_year, threshold, rent.burn_percent))
