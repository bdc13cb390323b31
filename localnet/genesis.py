"""What every Agave cluster has from its first slot, beyond the faucet and the project's
programs (programs.py): SPL Token's native mint and the precompiles; Token-2022's native
mint when asked for; and the rent epoch a transaction leaves on the accounts it writes
(docs/localnet.md, "Genesis").

- **SPL Token's native mint** (`So11111111111111111111111111111111111111112`), as the bank
  writes it on a development cluster (solana-labs/agave `runtime/src/bank.rs`,
  reconfigure_token2_native_mint): owner the Token program, 1 SOL, a Mint of 82 bytes
  with no mint or freeze authority, supply 0, 9 decimals, initialized; rent epoch the
  genesis epoch + 1.
- **Token-2022's native mint** (`9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP`): a validator's
  genesis does not write it, so by default the node does not either (a fresh
  solana-test-validator has none; clients that create it with Token-2022's
  CreateNativeMint, as @solana/spl-token's e2e suite does, need it absent). On mainnet and
  devnet it is there because someone ran that instruction, which leaves the same 82-byte
  Mint funded with the rent-exempt minimum and owned by Token-2022; `--token-2022-native-mint`
  (LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT) starts the node with it as the instruction
  leaves it, to look like those clusters.
  Both are stored like the faucet (kept across restarts; a data directory that has the
  Token-2022 one keeps it, with or without the flag: accounts are never deleted); a data
  directory from before them gets the missing ones at its next boot.
- **The precompiles** (ed25519, secp256k1): LiteSVM's full runtime has their accounts,
  the assembled one (node.py) does not, and without the account a transaction naming one
  fails with InvalidProgramForExecution. Their accounts are what a bank's
  add_precompiled_account writes — 1 lamport, owner the native loader, executable, no
  data, rent epoch 0 — set at every boot (they are part of the runtime, like the
  builtins and sysvars, not of the stored state). secp256r1 is behind a feature the
  assembled runtime does not activate: transactions naming it run on the full runtime.
- **Rent epoch**: with rent collection gone, Agave's account loader gives every account a
  transaction creates, and every rent-exempt account it writes, rent_epoch u64::MAX
  (RENT_EXEMPT_RENT_EPOCH, `svm/src/account_loader.rs`); LiteSVM leaves 0.
"""

from __future__ import annotations

from solders.account import Account
from solders.pubkey import Pubkey

from . import tokens
from .encoding import RESERVED_KEYS
from .parsing import NATIVE_MINT
from .store import StoredAccount

RENT_EXEMPT_RENT_EPOCH = 2**64 - 1
NATIVE_MINT_2022 = Pubkey.from_string("9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP")
NATIVE_LOADER = Pubkey.from_string("NativeLoader1111111111111111111111111111111")
ED25519 = Pubkey.from_string("Ed25519SigVerify111111111111111111111111111")
SECP256K1 = Pubkey.from_string("KeccakSecp256k11111111111111111111111111111")
SECP256R1 = Pubkey.from_string("Secp256r1SigVerify1111111111111111111111111")
#: the precompiles the assembled runtime runs once their accounts exist
ASSEMBLED_PRECOMPILES = (ED25519, SECP256K1)
#: Mint: COption<Pubkey> mint authority (none), supply 0, decimals 9, initialized, no freeze authority
NATIVE_MINT_DATA = bytes(44) + bytes([9, 1]) + bytes(36)
LAMPORTS_PER_SOL = 1_000_000_000
# The default Rent: lamports per byte-year × exemption threshold (2 years), over the data
# and the 128-byte account overhead (what minimum_balance_for_rent_exemption computes).
_RENT_PER_BYTE = 3480 * 2
_ACCOUNT_STORAGE_OVERHEAD = 128
#: programs LiteSVM loads itself (with_default_programs), not the store
DEFAULT_PROGRAMS = frozenset(Pubkey.from_string(k) for k in (
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
    "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL", "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
    "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
))
#: every account the runtime holds that the store does not: builtins, precompiles, sysvars
#: and the default programs (getLargestAccounts and getSupply count them too)
RUNTIME_KEYS = tuple(sorted(RESERVED_KEYS | DEFAULT_PROGRAMS, key=str))


def rent_exempt(lamports: int, size: int) -> bool:
    return lamports >= (size + _ACCOUNT_STORAGE_OVERHEAD) * _RENT_PER_BYTE


def native_mints(*, token_2022: bool = False) -> list[StoredAccount]:
    """SPL Token's native mint, and Token-2022's with ``token_2022``."""
    size = len(NATIVE_MINT_DATA)
    mints = [StoredAccount(str(NATIVE_MINT), LAMPORTS_PER_SOL, str(tokens.TOKEN_PROGRAM), False, 1, NATIVE_MINT_DATA)]
    if token_2022:
        mints.append(StoredAccount(str(NATIVE_MINT_2022), (size + _ACCOUNT_STORAGE_OVERHEAD) * _RENT_PER_BYTE, str(tokens.TOKEN_2022_PROGRAM), False,
                                   RENT_EXEMPT_RENT_EPOCH, NATIVE_MINT_DATA))
    return mints


def add_precompiles(runtime) -> None:
    """The precompile accounts a bank writes, where the runtime lacks them."""
    for key in ASSEMBLED_PRECOMPILES:
        if runtime.get_account(key) is None:
            runtime.set_account(key, Account(1, b"", NATIVE_LOADER, True, 0))


def load_missing(node, *, token_2022: bool = False) -> list[str]:
    """Write the native mints the node does not have into its runtimes and its store
    (genesis, or an older data directory); the addresses written. Nothing is removed: a
    data directory with Token-2022's native mint keeps it without ``token_2022``."""
    missing = [acc for acc in native_mints(token_2022=token_2022) if node.svm.get_account(Pubkey.from_string(acc.pubkey)) is None]
    for acc in missing:
        for runtime in node.runtimes:
            runtime.set_account(Pubkey.from_string(acc.pubkey), Account(acc.lamports, acc.data, Pubkey.from_string(acc.owner), acc.executable, acc.rent_epoch))
    if missing:
        node.store.commit_transaction(accounts=missing, deleted=[], tx=None, addresses=[])
    return [acc.pubkey for acc in missing]


def with_rent_epoch(before: Account | None, after: Account) -> Account:
    """``after`` (an account a transaction wrote) with the rent epoch Agave's loader gives
    it: u64::MAX if the transaction created it or it was rent exempt when loaded, else
    unchanged. The same object when nothing changes (the common case: one comparison)."""
    if after.rent_epoch == RENT_EXEMPT_RENT_EPOCH:
        return after
    if before is not None and before.lamports > 0 and not rent_exempt(before.lamports, len(before.data)):
        return after
    return Account(after.lamports, bytes(after.data), after.owner, after.executable, RENT_EXEMPT_RENT_EPOCH)
