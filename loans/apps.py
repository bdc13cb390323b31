from django.apps import AppConfig


class LoansConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "loans"

    def ready(self) -> None:
        from accounts.models import AccountType
        from positions.limits import CONTROLLED_BY

        from . import effects  # noqa: F401  (registers the confirmation handlers)
        from .lookup import escrow_controller, strategy_controller

        # Debit limits classify a transfer into a strategy by its lender, into an escrow by its borrower.
        CONTROLLED_BY[AccountType.VAULT] = strategy_controller
        CONTROLLED_BY[AccountType.LOAN_ESCROW] = escrow_controller
