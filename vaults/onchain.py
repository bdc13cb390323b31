"""The loan_vault program as the vaults area uses it: its id on the cluster, a vault's
addresses, its state as the chain holds it, and a transfer-hook payment mint's extra
accounts (programs/loan_vault/client.py encodes the instructions; docs/programs.md)."""

from __future__ import annotations

from solders.instruction import AccountMeta
from solders.pubkey import Pubkey

from instruments.token2022.transfer_hook import HookAccountsError, transfer_hook_accounts
from ledger_project.api.errors import LedgerError
from positions import instructions as ix
from programs.loan_vault import client
from chain.rpc import rpc_for
from transactions.programs import require_program_id

PROGRAM = "loan_vault"

#: The request field a vault program error is about (docs/vaults.md, "Errors"): the
#: 400 PROGRAM_ERROR names it; other errors concern the whole request (field null).
ERROR_FIELDS = {
    "AdminMismatch": "itemData.admin", "AdminNotSigner": "itemData.admin", "ZeroAdmin": "itemData.admin",
    "LoanMintAuthorityMismatch": "itemData.loanMintAuthority", "LoanMintAuthorityNotSigner": "itemData.loanMintAuthority",
    "LoanMintInvalid": "itemData.loanFinancialInstrument", "PaymentMintInvalid": "itemData.paymentFinancialInstrument",
    "SameMint": "itemData.paymentFinancialInstrument", "InvalidCapacity": "itemData.capacity",
    "DestinationNotTokenAccount": "itemData.destination", "DestinationWrongMint": "itemData.destination", "DestinationIsVault": "itemData.destination",
    "AlreadyWhitelisted": "itemData.destination", "WhitelistEntryMissing": "itemData.destination", "DestinationNotWhitelisted": "itemData.destination",
    "ZeroAmount": "itemData.value", "InvalidRentDestination": "itemData.refundDestination",
    "VaultAlreadyExists": "itemData", "VaultNotFound": "itemData.vault", "WhitelistFull": "itemData.vault", "WhitelistNotEmpty": "itemData.vault",
    "VaultNotEmpty": "itemData.vault", "StaleSequence": "itemData.vault", "WrongVaultAuthority": "itemData.vault", "WrongVaultState": "itemData.vault",
    "WrongVaultTokenAccount": "itemData.vault", "StateWrongOwner": "itemData.vault", "StateInvalid": "itemData.vault", "WrongPaymentMint": "itemData.vault",
}


def program_id(cluster: str) -> Pubkey:
    """The loan_vault program's id on ``cluster`` (400 PROGRAM_NOT_DEPLOYED without one)."""
    return require_program_id(cluster, PROGRAM)


def addresses_for(cluster: str, loan, payment) -> client.VaultAddresses:
    """The program's addresses of the (loan, payment) pair: authority, state, token account."""
    return client.VaultAddresses.of(program=program_id(cluster), loan_mint=Pubkey.from_string(loan.address),
                                    payment_mint=Pubkey.from_string(payment.address), token_program=ix.program_of(payment))


def addresses_of(vault) -> client.VaultAddresses:
    """A vault's addresses as recorded (the program re-derives and checks them)."""
    p = Pubkey.from_string
    return client.VaultAddresses(p(vault.program_address), p(vault.loan_instrument.address), p(vault.payment_instrument.address), p(vault.token_program),
                                 p(vault.authority_address), p(vault.state_address), p(vault.token_address))


def decode(account, program: str) -> client.VaultState | None:
    """The vault state in ``account`` (None when absent, not the program's, or not a vault)."""
    if account is None or str(account.owner) != program:
        return None
    try:
        return client.decode_state(bytes(account.data))
    except ValueError:
        return None


def hook_accounts(cluster: str, vault, destination: str, amount: int) -> list[AccountMeta]:
    """A Token-2022 transfer-hook payment mint's extra accounts for TransferChecked from the
    vault (the vault authority is the transfer's authority); none for other mints."""
    payment = vault.payment_instrument
    hook = payment.transfer_hook_program_address if "TRANSFER_HOOK" in (payment.extensions or []) else ""
    if not hook:
        return []
    rpc = rpc_for(cluster)

    def fetch(address: Pubkey) -> bytes | None:
        account = rpc.account(address)
        return bytes(account.data) if account is not None else None

    try:
        return transfer_hook_accounts(program=Pubkey.from_string(hook), mint=Pubkey.from_string(payment.address), source=Pubkey.from_string(vault.token_address),
                                      destination=Pubkey.from_string(destination), authority=Pubkey.from_string(vault.authority_address), amount=amount, fetch=fetch)
    except HookAccountsError as exc:
        raise LedgerError(f"The transfer hook's extra accounts cannot be resolved: {exc}", field="itemData", code="TRANSFER_HOOK_UNRESOLVED") from exc
