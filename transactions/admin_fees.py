"""The admin's "Platform-paid fees" page: for each organization, the fees the platform's fee
payer paid (landed, ``meta.fee``) or may still pay (in flight, their maximum fee) for its
transactions over the last 24 hours, per cluster, against the budget (transactions/fees.py;
docs/transactions.md, "Who pays the fee, and how much at most"). Read-only for everybody."""

from decimal import Decimal

from django.conf import settings
from django.contrib import admin

from ledger_project.staff import ReadOnlyAdmin
from django.utils.html import format_html_join

from . import fees
from .models import OrganizationPlatformFees


def _lamports(value: int) -> str:
    return f"{value:,} lamports ({Decimal(value).scaleb(-9):f} SOL)"


def _attach(organizations) -> None:
    found = fees.platform_fees_by_organization([o.pk for o in organizations])
    for organization in organizations:
        organization._platform_fees = found.get(organization.pk, {})


@admin.register(OrganizationPlatformFees)
class OrganizationPlatformFeesAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("external_id", "name", "spent_24h", "in_flight_24h", "landed_24h", "budget")
    search_fields = ("external_id", "name")
    fields = ("external_id", "name", "spent_24h", "in_flight_24h", "landed_24h", "budget")
    readonly_fields = fields
    list_per_page = 50

    # The page's organizations get their figures from one grouped query, set on the objects
    # the page renders (never on the shared ModelAdmin).
    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        _attach(changelist.result_list)
        return changelist

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            _attach([obj])
        return obj

    def _column(self, obj, key: str):
        figures = getattr(obj, "_platform_fees", None) or {}
        if not figures:
            return "—"
        return format_html_join(", ", "{}: {}", ((cluster, _lamports(values[key])) for cluster, values in sorted(figures.items())))

    @admin.display(description="paid or owed, 24 h")
    def spent_24h(self, obj):
        return self._column(obj, "spent")

    @admin.display(description="in flight (maximum fee)")
    def in_flight_24h(self, obj):
        return self._column(obj, "in_flight")

    @admin.display(description="landed (meta.fee)")
    def landed_24h(self, obj):
        return self._column(obj, "landed")

    @admin.display(description="budget per cluster, 24 h")
    def budget(self, obj):
        value = settings.LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS
        return "none" if value is None else _lamports(int(value))
