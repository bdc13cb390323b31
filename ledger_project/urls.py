from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from ledger_project.health import healthz
from ledger_project.metrics.views import metrics

api_v1 = [
    path("", include("tenancy.urls")),
    path("", include("transactions.urls")),
    path("", include("webhooks.urls")),
    path("", include("lookup_tables.urls")),
    path("", include("accounts.urls")),
    path("", include("instruments.urls")),
    path("", include("positions.urls")),
    path("", include("vaults.urls")),
    path("", include("loans.urls")),
    path("", include("marketdata.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
]

handler400 = "ledger_project.api.errors.handler400"
handler403 = "ledger_project.api.errors.handler403"
handler404 = "ledger_project.api.errors.handler404"
handler500 = "ledger_project.api.errors.handler500"
