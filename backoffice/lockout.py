"""Staff sign-in lockout (docs/admin.md, "Sign-in"): django-axes, with the back office's
settings, audit and message.

django-axes counts failed sign-ins per username and client address (AXES_LOCKOUT_PARAMETERS
in settings.py) in its AccessAttempt table; LEDGER_ADMIN_LOCKOUT_FAILURES failures, each
within LEDGER_ADMIN_LOCKOUT_SECONDS of the one before, lock that pair until
LEDGER_ADMIN_LOCKOUT_SECONDS after the last. While locked, its authentication backend (first
in AUTHENTICATION_BACKENDS) refuses before any password is checked, so guessing goes no
further and the right password does not end the lock early; a refused attempt does not
lengthen it. A successful sign-in clears the pair; a security officer can unlock in the
admin (backoffice.models.LoginFailure, a view of AccessAttempt).

What is ours: the callables below, which read the two LEDGER_ADMIN_LOCKOUT_* settings when
called (so tests and operators change them like any setting); usernames counted lower-cased,
so case variants share one count; the address is the client's by the project's one rule
(ledger_project.client_address, AXES_CLIENT_IP_CALLABLE: behind a proxy in
LEDGER_TRUSTED_PROXIES, the client its X-Forwarded-For names, so a forger locks only their
own pair, never the proxy's); and the form below, which audits each failure and lockout and says until
when the pair is locked, on the sign-in page itself rather than axes' bare 429 page.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from axes.handlers.proxy import AxesProxyHandler
from django import forms
from django.conf import settings
from django.core import checks
from django.contrib.admin.forms import AdminAuthenticationForm

from .audit import AuditKind, audit_record


def failure_limit(request, credentials) -> int:
    return settings.LEDGER_ADMIN_LOCKOUT_FAILURES


def cool_off(request) -> timedelta:
    return timedelta(seconds=settings.LEDGER_ADMIN_LOCKOUT_SECONDS)


def lock_end(last_failure: datetime) -> datetime:
    """When the lock a failure at ``last_failure`` completed (or kept) ends: axes counts the
    cool-off from the last failure."""
    return last_failure + cool_off(None)


def with_pair_counts(queryset):
    """Each attempt row with its username-and-address pair's figures as axes counts them:
    ``pair_failures``, the failures of the pair's rows (one per browser) within the cool-off,
    and ``pair_last``, the pair's last failure. One query, for the admin's list."""
    from django.db.models import Case, IntegerField, Max, Sum, When, Window
    from django.utils import timezone

    pair = ["username", "ip_address"]
    recent = Case(When(attempt_time__gte=timezone.now() - cool_off(None), then="failures_since_start"), default=0, output_field=IntegerField())
    return queryset.annotate(pair_failures=Window(Sum(recent), partition_by=pair), pair_last=Window(Max("attempt_time"), partition_by=pair))


def username(request, credentials) -> str | None:
    if credentials and credentials.get("username") is not None:
        name = credentials["username"]
    else:
        name = request.POST.get("username") if request is not None else None
    return name.strip().lower()[:150] if name is not None else None


def retired_window_check(app_configs, **kwargs) -> list[checks.Warning]:
    """The hand-written lockout's counting window has no meaning under axes: say so to an
    operator who still sets it, rather than let them believe it works."""
    if "LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS" not in os.environ:
        return []
    return [checks.Warning("LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS is no longer read: failures now count within LEDGER_ADMIN_LOCKOUT_SECONDS of each other.",
                           hint="Remove it; docs/admin.md, \"Sign-in\".", id="backoffice.W001")]


def locked_out_response(request, original_response, credentials):
    """The sign-in that reached the limit keeps its own answer (the form saying the
    password was wrong): the next attempt meets the lock, in the form's clean below."""
    return original_response


def locked_until(request, name: str) -> datetime | None:
    """When the lock on ``name`` from this request's address ends, or None if not locked."""
    credentials = {"username": name}
    if not AxesProxyHandler.is_locked(request, credentials):
        return None
    handler = AxesProxyHandler.get_implementation()
    last = max((attempt.attempt_time for attempts in handler.get_user_attempts(request, credentials) for attempt in attempts.only("attempt_time")),
               default=request.axes_attempt_time)
    return lock_end(last)


class LockoutAuthenticationForm(AdminAuthenticationForm):
    """The admin's sign-in form: the lock in front of the password check, and the audit."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "locked_out": "Too many failed sign-ins for this username from your address. Try again after %(until)s UTC, or ask a security officer to unlock it.",
    }

    def clean(self):
        name = self.cleaned_data.get("username") or ""
        until = locked_until(self.request, name)
        if until is not None:
            audit_record(request=self.request, kind=AuditKind.LOCKED_OUT, action="login", actor_name=name, outcome=[f"refused: locked until {until:%Y-%m-%d %H:%M:%S}"])
            raise forms.ValidationError(self.error_messages["locked_out"], code="locked_out", params={"until": f"{until:%H:%M:%S}"})
        try:
            cleaned = super().clean()  # axes counts a failure (its user_login_failed receiver)
        except forms.ValidationError:
            failures = getattr(self.request, "axes_failures_since_start", None) or 0
            limit = failure_limit(self.request, None)
            locked = bool(getattr(self.request, "axes_locked_out", False))
            outcome = f"failure {failures} of {limit}" + (f"; locked until {lock_end(self.request.axes_attempt_time):%Y-%m-%d %H:%M:%S}" if locked else "")
            audit_record(request=self.request, kind=AuditKind.LOCKED_OUT if locked else AuditKind.LOGIN_FAILED, action="login", actor_name=name, outcome=[outcome])
            raise
        if self.get_user() is None:  # a field was missing: the form shows its own error
            return cleaned
        # axes clears this pair's failures when the view signs the user in (AXES_RESET_ON_SUCCESS).
        audit_record(request=self.request, user=self.get_user(), kind=AuditKind.LOGIN, action="login")
        return cleaned
