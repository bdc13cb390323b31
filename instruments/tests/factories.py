import factory

from accounts.models import AccountType
from accounts.tests.factories import AccountFactory
from instruments.models import FinancialInstrument, TokenVersion
from tenancy.tests.factories import TenantFactory, TenantOwnedFactory


class FinancialInstrumentFactory(TenantOwnedFactory):
    """An offchain instrument record (nothing on chain) with its mint account record."""

    class Meta:
        model = FinancialInstrument

    tenant = factory.SubFactory(TenantFactory)
    cluster = "CHAIN_LOCALNET"
    mint_account = factory.SubFactory(AccountFactory, tenant=factory.SelfAttribute("..tenant"), type=AccountType.ASSET_TOKEN)
    address = factory.SelfAttribute("mint_account.address")
    version = TokenVersion.TOKEN_2022
    al_id = factory.Sequence(lambda n: f"ALFICBD{n:08d}")
    al_category = "FIXED_INCOME"
    al_type = "CORPORATE_BOND"
    extensions = factory.LazyFunction(lambda: ["PAUSABLE"])
    paused = False
