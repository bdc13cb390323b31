import factory
from solders.keypair import Keypair

from accounts.models import Account, AccountType
from tenancy.tests.factories import TenantFactory, TenantOwnedFactory


class AccountFactory(TenantOwnedFactory):
    """An offchain account record (not managed, nothing on chain)."""

    class Meta:
        model = Account

    tenant = factory.SubFactory(TenantFactory)
    cluster = "CHAIN_LOCALNET"
    address = factory.LazyFunction(lambda: str(Keypair().pubkey()))
    managed = False
    type = AccountType.WALLET
    name = factory.Sequence(lambda n: f"account {n}")
