"""Just enough of the SPL Token / Token-2022 account layouts to answer token RPC methods
cheaply: which kind an account is, and the amount, mint, owner and decimals fields.

Base layouts are shared by both programs: a token account is 165 bytes (mint 0..32,
owner 32..64, amount 64..72, state at 108); a mint is 82 bytes (supply 36..44, decimals
44). Token-2022 accounts with extensions are longer and carry an account-type byte at
165 (1 mint, 2 account). The whole base layouts (jsonParsed, parsing.py) are read by
solders; these few fixed offsets stay by hand because they are on the path of every
transaction (token_balances) and of every scan of a program's accounts, where unpacking
each account whole would cost more than the field read.
"""

from __future__ import annotations

from solders.pubkey import Pubkey

TOKEN_PROGRAM = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022_PROGRAM = Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
TOKEN_PROGRAMS = (TOKEN_PROGRAM, TOKEN_2022_PROGRAM)
ACCOUNT_SIZE, MINT_SIZE = 165, 82  # the base layouts; the account-type byte sits at ACCOUNT_SIZE


def is_token_account(acc) -> bool:
    if acc is None or acc.owner not in TOKEN_PROGRAMS:
        return False
    n = len(acc.data)
    return n == ACCOUNT_SIZE or (n > ACCOUNT_SIZE and acc.data[ACCOUNT_SIZE] == 2)


def is_mint(acc) -> bool:
    if acc is None or acc.owner not in TOKEN_PROGRAMS:
        return False
    n = len(acc.data)
    return n == MINT_SIZE or (n > ACCOUNT_SIZE and acc.data[ACCOUNT_SIZE] == 1)


def u64(data: bytes, offset: int) -> int:
    return int.from_bytes(bytes(data[offset:offset + 8]), "little")


def mint_decimals(acc) -> int:
    return acc.data[44]


def ui_amount(amount: int, decimals: int) -> dict:
    """UiTokenAmount as the reference computes it: uiAmountString is the exact decimal
    (trailing zeros trimmed); uiAmount is the wire format's f64, amount as f64 divided by
    10^decimals as f64 (account-decoder's token_amount_to_ui_amount)."""
    digits = str(amount)
    if decimals:
        digits = digits.rjust(decimals + 1, "0")
        text = (digits[:-decimals] + "." + digits[-decimals:]).rstrip("0").rstrip(".")
    else:
        text = digits
    return {"amount": str(amount), "decimals": decimals, "uiAmount": float(amount) / float(10 ** decimals), "uiAmountString": text}


def token_balances(keys, accounts: dict, get_account) -> list[dict]:
    """pre/postTokenBalances of a transaction (every token account among its keys). On the
    path of every transaction: each account's data is read once, each mint once."""
    out = []
    decimals_of: dict[bytes, int] = {}
    for index, key in enumerate(keys):
        acc = accounts.get(key)
        if acc is None:
            continue
        owner = acc.owner
        if owner != TOKEN_PROGRAM and owner != TOKEN_2022_PROGRAM:
            continue
        data = acc.data
        n = len(data)
        if not (n == ACCOUNT_SIZE or (n > ACCOUNT_SIZE and data[ACCOUNT_SIZE] == 2)):
            continue
        mint_raw = data[0:32]
        decimals = decimals_of.get(mint_raw)
        if decimals is None:
            mint_key = Pubkey(mint_raw)
            mint = accounts.get(mint_key) or get_account(mint_key)
            mint_data = mint.data if mint is not None else b""
            decimals = decimals_of[mint_raw] = mint_data[44] if len(mint_data) > 44 else 0
        out.append({
            "accountIndex": index,
            "mint": str(Pubkey(mint_raw)),
            "owner": str(Pubkey(data[32:64])),
            "programId": str(owner),
            "uiTokenAmount": ui_amount(int.from_bytes(data[64:72], "little"), decimals),
        })
    return out
