from django.apps import AppConfig


class InstrumentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "instruments"

    def ready(self) -> None:
        from . import effects  # noqa: F401  (registers the area's transaction effects)
        from . import webhooks  # noqa: F401  (registers the webhook credentials with custody's rotation)
        from . import schema  # noqa: F401  (registers the OpenAPI extension of simpleCustomMetadata)
        from accounts.services import register_al_id_write_hook

        from .alid import lock_for_account

        register_al_id_write_hook(lock_for_account)  # accounts cannot import an area (docs/style.md, "Apps depend downward")
