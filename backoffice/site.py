"""The admin site of the back office (docs/admin.md).

It is Django's default ``admin.site`` (backoffice.apps.LedgerAdminConfig), so every
``@admin.register`` in the project — and third-party registrations (auth, django-celery-beat,
django-celery-results) — goes through ``register`` here, which mixes ``StaffAdminMixin``
into the ModelAdmin (audit, confirmation, chain truth read-only, lists at scale). On top:
the sign-in form with lockout, the operations dashboard on the index page, the "open on
the chain" page of any chain record, and the master-key rotation page.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.urls import path

from .audit import AuditKind, audit_record
from .options import StaffAdminMixin


class LedgerAdminSite(admin.AdminSite):
    site_header = "Ledger back office"
    site_title = "Ledger back office"
    index_title = "Operations"

    @property
    def login_form(self):
        from .lockout import LockoutAuthenticationForm

        return LockoutAuthenticationForm

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or ModelAdmin
        if not issubclass(admin_class, StaffAdminMixin):
            admin_class = type(admin_class.__name__, (StaffAdminMixin, admin_class), {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__})
        return super().register(model_or_iterable, admin_class, **options)

    def get_urls(self):
        from . import chainview, custody

        extra = [
            path("chain/<str:app_label>/<str:model_name>/<path:object_id>/", self.admin_view(chainview.chain_view), name="backoffice_chain"),
            path("custody/master-key/", self.admin_view(custody.master_key_view), name="backoffice_master_key"),
        ]
        return extra + super().get_urls()

    def index(self, request, extra_context=None):
        from .dashboard import dashboard

        context = dict(extra_context or {})
        if request.user.has_perm("backoffice.view_heartbeat"):
            context["dashboard"] = dashboard(request)
        return super().index(request, context)

    def logout(self, request, extra_context=None):
        if request.method == "POST" and request.user.is_authenticated:
            audit_record(request=request, kind=AuditKind.LOGOUT, action="logout")
        return super().logout(request, extra_context)
