from django.apps import AppConfig


class TransactionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "transactions"

    def ready(self) -> None:
        from . import webhooks  # noqa: F401  (registers the webhook secrets with custody's rotation)
