import factory

from tenancy import services
from tenancy.models import TenantOrganization


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TenantOrganization
        django_get_or_create = ("external_id",)

    external_id = factory.Sequence(lambda n: f"ORG{n:04d}")
    name = factory.LazyAttribute(lambda o: f"Organization {o.external_id}")


def issue_key(tenant=None, roles=(), **kwargs) -> services.IssuedApiKey:
    """A new API key (and its secret) through the real service."""
    return services.api_key_create(organization=tenant or TenantFactory(), roles=list(roles), **kwargs)
