from django.apps import AppConfig


class VaultsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "vaults"

    def ready(self) -> None:
        from accounts.models import AccountType
        from positions.limits import CONTROLLED_BY

        from . import effects  # noqa: F401  (registers the confirmation handlers)
        from .lookup import vault_controller

        # Debit limits classify a transfer into a vault by who controls it: its admin.
        CONTROLLED_BY[AccountType.VAULT_AUTHORITY] = vault_controller
