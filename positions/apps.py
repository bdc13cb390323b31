from django.apps import AppConfig


class PositionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "positions"

    def ready(self) -> None:
        from . import balances, batch_effects, effects, movement_effects  # noqa: F401  (register the area's transaction effects: lifecycle, balances, mint/burn/transfer/trade, batch payouts)
