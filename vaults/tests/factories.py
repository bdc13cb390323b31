"""Vault records with nothing on chain (tenancy cases, admin pages)."""

from __future__ import annotations

from solders.keypair import Keypair

from accounts.models import AccountType
from accounts.tests.factories import AccountFactory
from instruments.tests.factories import FinancialInstrumentFactory
from positions.models import Position
from vaults.models import Vault, VaultStatus


def make_vault(tenant, *, status: str = VaultStatus.ACTIVE, **fields) -> Vault:
    """A vault of a fresh (loan, payment) pair: its instruments, authority record and
    FUNDS_TOKEN_ACCOUNT position, recorded only."""
    loan = FinancialInstrumentFactory(tenant=tenant, al_type="LOAN", decimals=0)
    payment = FinancialInstrumentFactory(tenant=tenant, al_type="STABLECOIN", al_category="FX", decimals=2)
    authority = AccountFactory(tenant=tenant, type=AccountType.VAULT_AUTHORITY)
    account = AccountFactory(tenant=tenant, type=AccountType.FUNDS_TOKEN_ACCOUNT, token_balance=0, token_decimals=2)
    position = Position.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", account=account, address=account.address, owner=authority,
                                        owner_address=authority.address, instrument=payment)
    address = lambda: str(Keypair().pubkey())  # noqa: E731
    return Vault.unscoped.create(
        tenant=tenant, cluster="CHAIN_LOCALNET", offchain_id=position.offchain_id, loan_instrument=loan, payment_instrument=payment, position=position,
        authority_account=authority, program_address=address(), authority_address=authority.address, state_address=address(),
        token_address=account.address, token_program=address(), admin_address=address(), capacity=4, status=status, **fields,
    )
