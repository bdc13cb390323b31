"""Token accounts as the network holds them. SPL Token and Token-2022 share the 165-byte
base layout (Token-2022 appends its extensions after it), read by solders
(``solders.token.state.TokenAccount``, SPL Token's own unpacking): ValueError when the data
is not an initialized token account."""

from __future__ import annotations

from dataclasses import dataclass

from solders.token.state import TokenAccount
from solders.token.state import TokenAccountState as _State

from instruments.token2022.constants import ACCOUNT_SIZE


@dataclass(frozen=True)
class TokenAccountState:
    mint: str
    owner: str
    amount: int
    delegate: str | None
    frozen: bool
    delegated_amount: int
    close_authority: str | None


def decode_token_account(data: bytes) -> TokenAccountState:
    if len(data) < ACCOUNT_SIZE:
        raise ValueError("not a token account")
    base = TokenAccount.from_bytes(bytes(data[:ACCOUNT_SIZE]))  # ValueError: not initialized, or invalid
    return TokenAccountState(
        mint=str(base.mint),
        owner=str(base.owner),
        amount=base.amount,
        delegate=str(base.delegate) if base.delegate is not None else None,
        frozen=base.state == _State.Frozen,
        delegated_amount=base.delegated_amount,
        close_authority=str(base.close_authority) if base.close_authority is not None else None,
    )


def token_account_at(account, *, program=None) -> TokenAccountState | None:
    """The state of a fetched account (an RPC answer's account, or None); None when nothing
    is there, when it belongs to a program other than ``program`` (if given), or when it is
    not an initialized token account."""
    if account is None or (program is not None and account.owner != program):
        return None
    try:
        return decode_token_account(bytes(account.data))
    except ValueError:
        return None
