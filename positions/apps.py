from django.apps import AppConfig


class PositionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "positions"

    def ready(self) -> None:
        from . import effects  # noqa: F401  (registers the area's transaction effects)
        from . import movement_effects  # noqa: F401  (mint, burn, transfer, trade)
