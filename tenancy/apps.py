from django.apps import AppConfig


class TenancyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tenancy"

    def ready(self) -> None:
        # Registers the OpenAPI description of bearer authentication.
        from ledger_project.api import schema  # noqa: F401
