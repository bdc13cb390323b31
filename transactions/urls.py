from django.urls import path

from .views import TransactionViewSet

urlpatterns = [
    path("transactions/single/status", TransactionViewSet.as_view({"post": "status"}), name="transaction-status"),
]
