import factory
from solders.keypair import Keypair

from tenancy.tests.factories import TenantFactory, TenantOwnedFactory
from lookup_tables.models import AddressLookupTable, LookupTableState


def _addresses(count: int) -> list[str]:
    return [str(Keypair().pubkey()) for _ in range(count)]


class AddressLookupTableFactory(TenantOwnedFactory):
    """A lookup table record only (nothing on chain): for reads, queries and tenancy."""

    class Meta:
        model = AddressLookupTable

    tenant = factory.SubFactory(TenantFactory)
    cluster = "CHAIN_LOCALNET"
    address = factory.LazyFunction(lambda: str(Keypair().pubkey()))
    authority = factory.LazyFunction(lambda: str(Keypair().pubkey()))
    state = LookupTableState.ACTIVE
    addresses = factory.LazyFunction(lambda: _addresses(3))
    addresses_count = factory.LazyAttribute(lambda table: len(table.addresses))
    last_extended_slot = 1
