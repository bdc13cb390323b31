from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks (docs/webhooks.md): subscriptions, the outbox, delivery and network events.
    The app stands on the engine, which tells it of transactions' moments through
    transactions/notify.py; the areas above it (instruments, accounts) use its services."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from transactions.notify import register_transaction_listener

        from . import credentials  # noqa: F401  (registers the webhook secrets with custody's rotation)
        from .outbox import transaction_events

        # The engine's PRE_SUBMIT / POST_SUBMIT moments become events in the same database
        # transaction (webhooks/outbox.py).
        register_transaction_listener(transaction_events)
