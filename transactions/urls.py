from django.urls import path

from .views import TransactionViewSet

urlpatterns = [
    path("transactions/single/status", TransactionViewSet.as_view({"post": "status"}), name="transaction-status"),
    path("transactions/approve", TransactionViewSet.as_view({"patch": "approve"}), name="transaction-approve"),
    path("transactions/reject", TransactionViewSet.as_view({"patch": "reject"}), name="transaction-reject"),
    path("transactions/sign", TransactionViewSet.as_view({"patch": "sign"}), name="transaction-sign"),
    path("transactions/submit", TransactionViewSet.as_view({"patch": "submit"}), name="transaction-submit"),
    path("transactions/withdraw", TransactionViewSet.as_view({"patch": "withdraw"}), name="transaction-withdraw"),
    path("transactions/single", TransactionViewSet.as_view({"post": "details"}), name="transaction-details"),
    path("transactions/bulk/<str:detail_level>", TransactionViewSet.as_view({"post": "bulk"}), name="transactions-bulk"),
]
