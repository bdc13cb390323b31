"""Token-account instructions for positions: the SPL Token and Token-2022 programs share
these instruction layouts (the program id follows the instrument's version); the
Associated Token Account program's CreateIdempotent is encoded here (index 1: same
accounts as Create, succeeds when the account already exists for that owner and mint)."""

from __future__ import annotations

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey
from spl.token.constants import ASSOCIATED_TOKEN_PROGRAM_ID
from spl.token.instructions import get_associated_token_address

from accounts.services import SYSTEM_PROGRAM, TOKEN_PROGRAMS

from instruments.token2022.constants import ACCOUNT_SIZE  # a token account without extensions (both programs)

#: Account-side extension each mint extension requires (Token-2022), with its data length:
#: TransferHook → TransferHookAccount (1: the "transferring" flag), Pausable →
#: PausableAccount (0), NonTransferable → NonTransferableAccount (0), TransferFeeConfig →
#: TransferFeeAmount (8). The Associated Token Account program sizes accounts the same way
#: (GetAccountDataSize); a test compares the two on the node.
_ACCOUNT_EXTENSION_LENGTH = {"TRANSFER_HOOK": 1, "PAUSABLE": 0, "NON_TRANSFERABLE": 0, "TRANSFER_FEE": 8}


def program_of(instrument) -> Pubkey:
    return TOKEN_PROGRAMS[instrument.version]


def associated_address(owner: str | Pubkey, instrument) -> Pubkey:
    owner_key = owner if isinstance(owner, Pubkey) else Pubkey.from_string(owner)
    return get_associated_token_address(owner_key, Pubkey.from_string(instrument.address), program_of(instrument))


def create_associated_idempotent(*, payer: Pubkey, owner: Pubkey, instrument) -> Instruction:
    mint = Pubkey.from_string(instrument.address)
    program = program_of(instrument)
    account = get_associated_token_address(owner, mint, program)
    return Instruction(
        ASSOCIATED_TOKEN_PROGRAM_ID,
        bytes([1]),
        [
            AccountMeta(payer, is_signer=True, is_writable=True),
            AccountMeta(account, is_signer=False, is_writable=True),
            AccountMeta(owner, is_signer=False, is_writable=False),
            AccountMeta(mint, is_signer=False, is_writable=False),
            AccountMeta(SYSTEM_PROGRAM, is_signer=False, is_writable=False),
            AccountMeta(program, is_signer=False, is_writable=False),
        ],
    )


def account_size(instrument) -> int:
    """Bytes of a token account of ``instrument`` with the extensions its mint requires
    (no ImmutableOwner: that one only associated accounts carry)."""
    if instrument.version != "TOKEN_2022":
        return ACCOUNT_SIZE
    lengths = [_ACCOUNT_EXTENSION_LENGTH[e] for e in (instrument.extensions or []) if e in _ACCOUNT_EXTENSION_LENGTH]
    if not lengths:
        return ACCOUNT_SIZE
    return ACCOUNT_SIZE + 1 + sum(4 + n for n in lengths)
