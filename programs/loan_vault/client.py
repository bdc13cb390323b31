"""Python side of the loan remittance vault program: addresses, instruction encoders, the
state decoder and error names, all from abi.py (the definition the program's header is
generated from). Pure functions: nothing here talks to a cluster."""

from __future__ import annotations

from dataclasses import dataclass

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from . import abi

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
ASSOCIATED_TOKEN_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")


def authority_address(program: Pubkey, loan_mint: Pubkey, payment_mint: Pubkey) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_AUTHORITY, bytes(loan_mint), bytes(payment_mint)], program)


def state_address(program: Pubkey, loan_mint: Pubkey, payment_mint: Pubkey) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_STATE, bytes(loan_mint), bytes(payment_mint)], program)


def vault_token_address(program: Pubkey, loan_mint: Pubkey, payment_mint: Pubkey, token_program: Pubkey) -> Pubkey:
    authority = authority_address(program, loan_mint, payment_mint)[0]
    return Pubkey.find_program_address([bytes(authority), bytes(token_program), bytes(payment_mint)], ASSOCIATED_TOKEN_PROGRAM)[0]


@dataclass(frozen=True)
class VaultAddresses:
    program: Pubkey
    loan_mint: Pubkey
    payment_mint: Pubkey
    token_program: Pubkey
    authority: Pubkey
    state: Pubkey
    vault_token: Pubkey

    @classmethod
    def of(cls, *, program: Pubkey, loan_mint: Pubkey, payment_mint: Pubkey, token_program: Pubkey) -> "VaultAddresses":
        return cls(
            program, loan_mint, payment_mint, token_program,
            authority_address(program, loan_mint, payment_mint)[0],
            state_address(program, loan_mint, payment_mint)[0],
            vault_token_address(program, loan_mint, payment_mint, token_program),
        )


def _instruction(vault: VaultAddresses, name: str, keys: dict[str, Pubkey], extra: list[AccountMeta] = (), **args) -> Instruction:
    spec = abi.ABI.instruction(name)
    metas = [AccountMeta(keys[a.name], is_signer=a.signer, is_writable=a.writable) for a in spec.accounts]
    return Instruction(vault.program, spec.encode(**args), [*metas, *extra])


def create_vault(vault: VaultAddresses, *, payer: Pubkey, loan_mint_authority: Pubkey, admin: Pubkey, capacity: int) -> Instruction:
    keys = {
        "payer": payer, "state": vault.state, "authority": vault.authority, "vault_token": vault.vault_token,
        "loan_mint": vault.loan_mint, "payment_mint": vault.payment_mint, "loan_mint_authority": loan_mint_authority,
        "admin": admin, "system_program": SYSTEM_PROGRAM, "token_program": vault.token_program,
        "associated_token_program": ASSOCIATED_TOKEN_PROGRAM,
    }
    return _instruction(vault, "CreateVault", keys, capacity=capacity)


def update_whitelist(vault: VaultAddresses, *, admin: Pubkey, destination: Pubkey, remove: bool = False) -> Instruction:
    keys = {"state": vault.state, "admin": admin, "destination": destination}
    return _instruction(vault, "UpdateWhitelist", keys, action=abi.ACTION_REMOVE if remove else abi.ACTION_ADD)


def repayment(vault: VaultAddresses, *, admin: Pubkey, destination: Pubkey, amount: int, sequence: int, extra: list[AccountMeta] = ()) -> Instruction:
    """``extra``: for a Token-2022 transfer-hook payment mint, the accounts TransferChecked
    needs after its four (instruments/token2022/transfer_hook.py resolves them)."""
    keys = {
        "state": vault.state, "authority": vault.authority, "vault_token": vault.vault_token,
        "payment_mint": vault.payment_mint, "destination": destination, "admin": admin, "token_program": vault.token_program,
    }
    return _instruction(vault, "Repayment", keys, list(extra), sequence=sequence, amount=amount)


def close_vault(vault: VaultAddresses, *, admin: Pubkey, rent_destination: Pubkey) -> Instruction:
    keys = {
        "state": vault.state, "authority": vault.authority, "vault_token": vault.vault_token, "admin": admin,
        "rent_destination": rent_destination, "token_program": vault.token_program,
    }
    return _instruction(vault, "CloseVault", keys)


@dataclass(frozen=True)
class VaultState:
    loan_mint: Pubkey
    payment_mint: Pubkey
    admin: Pubkey
    vault_token: Pubkey
    token_program: Pubkey
    authority_bump: int
    state_bump: int
    capacity: int
    last_sequence: int
    whitelist: tuple[Pubkey, ...]


def decode_state(data: bytes) -> VaultState:
    head = abi.VAULT_STATE.unpack(data)
    if head["kind"] != abi.VAULT_KIND or head["version"] != abi.LAYOUT_VERSION:
        raise ValueError("not a vault state account")
    if len(data) < abi.state_size(head["capacity"]) or head["count"] > head["capacity"]:
        raise ValueError("vault state data is shorter than its capacity")
    start = abi.VAULT_STATE.size
    size = abi.DESTINATION_SIZE
    whitelist = tuple(Pubkey.from_bytes(data[start + i * size:start + (i + 1) * size]) for i in range(head["count"]))
    return VaultState(
        loan_mint=Pubkey.from_bytes(head["loan_mint"]), payment_mint=Pubkey.from_bytes(head["payment_mint"]),
        admin=Pubkey.from_bytes(head["admin"]), vault_token=Pubkey.from_bytes(head["vault_token"]),
        token_program=Pubkey.from_bytes(head["token_program"]), authority_bump=head["authority_bump"],
        state_bump=head["state_bump"], capacity=head["capacity"], last_sequence=head["last_sequence"], whitelist=whitelist,
    )


def error_name(code: int) -> str | None:
    """The program's name for Custom(code), or None when the code is not the vault's."""
    error = abi.ABI.error_by_code(code)
    return error.name if error else None
