import factory

from tenancy import services
from tenancy.models import TenantOrganization


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TenantOrganization
        django_get_or_create = ("external_id",)

    external_id = factory.Sequence(lambda n: f"ORG{n:04d}")
    name = factory.LazyAttribute(lambda o: f"Organization {o.external_id}")


class TenantOwnedFactory(factory.django.DjangoModelFactory):
    """Base of factories of tenant-owned models: they write rows for a tenant they are
    given, like a worker, so through ``Model.unscoped`` (``objects`` needs a tenant)."""

    class Meta:
        abstract = True

    @classmethod
    def _get_manager(cls, model_class):
        return model_class.unscoped


def issue_key(tenant=None, roles=(), **kwargs) -> services.IssuedApiKey:
    """A new API key (and its secret) through the real service."""
    return services.api_key_create(organization=tenant or TenantFactory(), roles=list(roles), **kwargs)
