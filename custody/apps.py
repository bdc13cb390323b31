from django.apps import AppConfig


class CustodyConfig(AppConfig):
    """Key custody: managed keys, sealing and master-key rotation. It stands below the
    transaction engine and every area (docs/architecture.md) and imports none of them."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "custody"
