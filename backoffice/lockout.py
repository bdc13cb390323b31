"""Staff sign-in lockout (docs/admin.md, "Sign-in"): a failure counter per username and
client address, and a cool-down.

LEDGER_ADMIN_LOCKOUT_FAILURES failures of one username from one address within
LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS lock that pair for LEDGER_ADMIN_LOCKOUT_SECONDS: the
sign-in form then refuses it without checking the password (so guessing goes no further,
and the right password does not unlock it early). A successful sign-in clears the
counter; a security officer can unlock in the admin (deleting the LoginFailure row).
Usernames are counted lower-cased, so case variants share one counter. The address is
REMOTE_ADDR: behind a proxy, the proxy must set it to the client's (gunicorn's
forwarded_allow_ips), or every client shares the proxy's counter.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .audit import AuditKind, audit_record, client_ip
from .models import LoginFailure


def _key(username: str, ip: str | None) -> tuple[str, str]:
    return (username or "").strip().lower()[:150], ip or "0.0.0.0"


def locked_until(username: str, ip: str | None) -> datetime | None:
    name, address = _key(username, ip)
    row = LoginFailure.objects.filter(username=name, ip=address, locked_until__gt=timezone.now()).only("locked_until").first()
    return row.locked_until if row is not None else None


def failure_record(username: str, ip: str | None) -> LoginFailure:
    """Count one failure; lock the pair when it reaches the limit within the window."""
    name, address = _key(username, ip)
    now = timezone.now()
    window = timedelta(seconds=settings.LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS)
    with transaction.atomic():
        row = LoginFailure.objects.select_for_update().filter(username=name, ip=address).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = LoginFailure.objects.create(username=name, ip=address, failures=0, first_failure_at=now, last_failure_at=now)
            except IntegrityError:  # a concurrent first failure created it
                row = LoginFailure.objects.select_for_update().get(username=name, ip=address)
        if row.first_failure_at < now - window or (row.locked_until is not None and row.locked_until <= now):
            # The window (or a lock) is over: counting starts again.
            LoginFailure.objects.filter(pk=row.pk).update(failures=0, first_failure_at=now, locked_until=None)
        LoginFailure.objects.filter(pk=row.pk).update(failures=F("failures") + 1, last_failure_at=now)
        row.refresh_from_db()
        if row.failures >= settings.LEDGER_ADMIN_LOCKOUT_FAILURES and row.locked_until is None:
            row.locked_until = now + timedelta(seconds=settings.LEDGER_ADMIN_LOCKOUT_SECONDS)
            row.save(update_fields=["locked_until"])
    return row


def failures_clear(username: str, ip: str | None) -> None:
    name, address = _key(username, ip)
    LoginFailure.objects.filter(username=name, ip=address).delete()


class LockoutAuthenticationForm(AdminAuthenticationForm):
    """The admin's sign-in form with the lockout in front of the password check."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "locked_out": "Too many failed sign-ins for this username from your address. Try again after %(until)s UTC, or ask a security officer to unlock it.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        ip = client_ip(self.request)
        until = locked_until(username, ip)
        if until is not None:
            audit_record(request=self.request, kind=AuditKind.LOCKED_OUT, action="login", actor_name=username, outcome=[f"refused: locked until {until:%Y-%m-%d %H:%M:%S}"])
            raise forms.ValidationError(self.error_messages["locked_out"], code="locked_out", params={"until": f"{until:%H:%M:%S}"})
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            row = failure_record(username, ip)
            locked = row.locked_until is not None
            audit_record(request=self.request, kind=AuditKind.LOCKED_OUT if locked else AuditKind.LOGIN_FAILED, action="login", actor_name=username,
                         outcome=[f"failure {row.failures} of {settings.LEDGER_ADMIN_LOCKOUT_FAILURES}" + (f"; locked until {row.locked_until:%Y-%m-%d %H:%M:%S}" if locked else "")])
            raise
        if self.get_user() is None:  # a field was missing: the form shows its own error
            return cleaned
        failures_clear(username, ip)
        audit_record(request=self.request, user=self.get_user(), kind=AuditKind.LOGIN, action="login")
        return cleaned
