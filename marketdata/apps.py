from django.apps import AppConfig


class MarketdataConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "marketdata"
    verbose_name = "Market data"

    def ready(self) -> None:
        from ledger_project.metrics.collect import collector_register

        from . import effects  # noqa: F401  (registers the confirmation handlers)
        from .metrics import marketdata_state

        collector_register("marketdata", marketdata_state)
