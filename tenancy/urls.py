from django.urls import path

from .views import AccessTokenView, WhoAmIViewSet

urlpatterns = [
    path("auth/token", AccessTokenView.as_view(), name="auth-token"),
    path("auth/whoami", WhoAmIViewSet.as_view({"get": "whoami_get", "post": "whoami"}), name="auth-whoami"),
]
