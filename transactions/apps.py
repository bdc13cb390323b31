from django.apps import AppConfig


class TransactionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "transactions"

    def ready(self) -> None:
        from chain.errors import register_failure_reader

        from .programs import failure_from_logs

        # A refused simulation names the project program's own error (docs/programs.md).
        register_failure_reader(failure_from_logs)
