"""Back office pages of its own records: the staff audit (read-only for everybody), sign-in
lockouts (unlock), heartbeats; and staff users, whose superuser flag and direct
permissions only a superuser may change (roles are given by groups)."""

from __future__ import annotations

import json
import operator
from functools import reduce

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import Q
from django.utils import timezone
from django.utils.html import format_html

from . import lockout
from .models import Heartbeat, LoginFailure, StaffAuditEntry
from ledger_project.staff import ReadOnlyAdmin as BaseReadOnly, staff_action


class ReadOnlyAdmin(BaseReadOnly, admin.ModelAdmin):
    pass


@admin.register(StaffAuditEntry)
class StaffAuditEntryAdmin(ReadOnlyAdmin):
    """Append-only: nobody adds, changes or deletes an entry here, superusers included."""

    list_display = ("at", "actor", "kind", "action", "model", "object_count", "object_repr", "ip")
    list_filter = ("kind", "model", "action")
    search_fields = ("actor", "action", "object_repr", "request_id")
    date_hierarchy = "at"
    actions = None
    fields = ("at", "actor", "actor_id", "ip", "kind", "action", "description", "model", "object_ids", "object_count", "object_repr",
              "before_pretty", "after_pretty", "outcome", "request_id")
    readonly_fields = fields

    @admin.display(description="before")
    def before_pretty(self, entry):
        return format_html("<pre>{}</pre>", json.dumps(entry.before, indent=2, sort_keys=True)) if entry.before is not None else "-"

    @admin.display(description="after")
    def after_pretty(self, entry):
        return format_html("<pre>{}</pre>", json.dumps(entry.after, indent=2, sort_keys=True)) if entry.after is not None else "-"


@admin.register(LoginFailure)
class LoginFailureAdmin(ReadOnlyAdmin):
    """django-axes' attempts (backoffice/lockout.py); its request copies (get_data,
    post_data) are left out: a sign-in form has nothing an officer needs there."""

    list_display = ("username", "ip_address", "failures_since_start", "attempt_time", "locked_until")
    search_fields = ("=username", "=ip_address")
    fields = ("username", "ip_address", "user_agent", "path_info", "failures_since_start", "attempt_time", "locked_until")
    readonly_fields = fields
    actions = ["unlock"]

    def get_queryset(self, request):
        return lockout.with_pair_counts(super().get_queryset(request))

    @admin.display(description="locked until")
    def locked_until(self, row):
        # axes locks a pair on the sum of its rows (one per browser), not on one row's count.
        if row.pair_failures < lockout.failure_limit(None, None):
            return "-"
        until = lockout.lock_end(row.pair_last)
        return until if until > timezone.now() else "-"

    @staff_action(description="Unlock: clear the failures of the selected sign-ins", permissions=["unlock"],
                  confirm_note="The username may sign in again from that address at once.")
    def unlock(self, request, queryset):
        # axes keeps a row per browser (user agent) and locks on their sum: clear the pair.
        pairs = {(row.username, row.ip_address) for row in queryset}
        LoginFailure.objects.filter(reduce(operator.or_, (Q(username=name, ip_address=ip) for name, ip in pairs), Q(pk__in=[]))).delete()
        self.message_user(request, f"{len(pairs)} sign-in lock(s) cleared.", messages.SUCCESS)

    def has_unlock_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.unlock_login")


@admin.register(Heartbeat)
class HeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("name", "at", "detail")


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class StaffUserAdmin(UserAdmin):
    """Staff users: roles are groups. Granting superuser status or permissions one by one
    is for superusers only, so a security officer cannot raise anyone above the roles."""

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            readonly += ["is_superuser", "user_permissions"]
        return readonly
