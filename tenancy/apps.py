from django.apps import AppConfig


class TenancyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tenancy"

    def ready(self) -> None:
        # Registers the OpenAPI description of bearer authentication, and the shared
        # extensions (strict bodies, base58 fields) of ledger_project/api/schema.py.
        from ledger_project.api import schema  # noqa: F401

        from . import authentication  # noqa: F401
        from . import chain_errors

        chain_errors.register()  # the chain client's errors answered as the API's (docs/errors.md, Chain)
