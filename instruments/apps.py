from django.apps import AppConfig


class InstrumentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "instruments"

    def ready(self) -> None:
        from . import effects  # noqa: F401  (registers the area's transaction effects)
        from . import webhooks  # noqa: F401  (registers the webhook credentials with custody's rotation)
