from django.apps import AppConfig


class MarketdataConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "marketdata"
    verbose_name = "Market data"

    def ready(self) -> None:
        from . import effects  # noqa: F401  (registers the confirmation handlers)
