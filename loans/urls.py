from django.urls import path

from .views import LoanStrategyViewSet, LoanViewSet

urlpatterns = [
    path("loans", LoanViewSet.as_view({"post": "create"}), name="loan-create"),
    path("loans/single", LoanViewSet.as_view({"post": "details"}), name="loan-details"),
    path("loans/bulk", LoanViewSet.as_view({"post": "bulk"}), name="loan-bulk"),
    path("loans/swap-collateral", LoanViewSet.as_view({"patch": "swap_collateral"}), name="loan-swap-collateral"),
    path("loans/repay", LoanViewSet.as_view({"patch": "repay"}), name="loan-repay"),
    path("loans/close", LoanViewSet.as_view({"patch": "close"}), name="loan-close"),
    path("loans/refinance", LoanViewSet.as_view({"patch": "refinance"}), name="loan-refinance"),
    # Not in the spec (docs/loans.md, "Loan strategies"): how a loanStrategyAddress is prepared.
    path("loans/strategies", LoanStrategyViewSet.as_view({"post": "create", "patch": "update"}), name="loan-strategy"),
    path("loans/strategies/single", LoanStrategyViewSet.as_view({"post": "details"}), name="loan-strategy-details"),
    path("loans/strategies/liquidity", LoanStrategyViewSet.as_view({"patch": "liquidity"}), name="loan-strategy-liquidity"),
]
