"""Staff sign-in: Django's password validators, and the lockout after repeated failures
(a counter per username and address, a cool-down; docs/admin.md "Sign-in")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from backoffice.models import AuditKind, LoginFailure, StaffAuditEntry

from .staff import PASSWORD, client_for, staff_user

LOGIN = "/admin/login/?next=/admin/"


def sign_in(client, username: str, password: str, ip: str = "127.0.0.1"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.fixture(autouse=True)
def lockout_settings(settings):
    settings.LEDGER_ADMIN_LOCKOUT_FAILURES = 3
    settings.LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS = 600
    settings.LEDGER_ADMIN_LOCKOUT_SECONDS = 900


@pytest.mark.django_db
def test_repeated_failures_lock_the_username_from_that_address_even_for_the_right_password(client):
    staff_user("viewer", "vera")
    for attempt in range(3):
        assert sign_in(client, "Vera", "wrong").status_code == 200  # case variants share one counter
    row = LoginFailure.objects.get()
    assert (row.username, row.ip, row.failures) == ("vera", "127.0.0.1", 3) and row.locked_until > timezone.now() + timedelta(seconds=800)
    locked = sign_in(client, "vera", PASSWORD)
    assert locked.status_code == 200 and "Too many failed sign-ins" in locked.content.decode() and "_auth_user_id" not in client.session
    # Another address is not locked: the counter is per username and address.
    assert sign_in(client, "vera", PASSWORD, ip="10.0.0.9").status_code == 302
    kinds = list(StaffAuditEntry.objects.order_by("pk").values_list("kind", flat=True))
    assert kinds == [AuditKind.LOGIN_FAILED, AuditKind.LOGIN_FAILED, AuditKind.LOCKED_OUT, AuditKind.LOCKED_OUT, AuditKind.LOGIN]
    assert StaffAuditEntry.objects.filter(kind=AuditKind.LOGIN_FAILED, actor="Vera", actor_id=None).count() == 2


@pytest.mark.django_db
def test_the_lock_ends_after_the_cool_down_and_a_success_clears_the_count(client):
    staff_user("viewer", "vera")
    for _ in range(3):
        sign_in(client, "vera", "wrong")
    LoginFailure.objects.update(locked_until=timezone.now() - timedelta(seconds=1))
    assert sign_in(client, "vera", PASSWORD).status_code == 302
    assert not LoginFailure.objects.exists()
    # Failures spread wider than the window never lock.
    client.logout()
    sign_in(client, "vera", "wrong")
    sign_in(client, "vera", "wrong")
    LoginFailure.objects.update(first_failure_at=timezone.now() - timedelta(seconds=601))
    sign_in(client, "vera", "wrong")
    assert LoginFailure.objects.get().failures == 1 and LoginFailure.objects.get().locked_until is None


@pytest.mark.django_db
def test_a_security_officer_unlocks_a_locked_sign_in(client):
    staff_user("viewer", "vera")
    for _ in range(3):
        sign_in(client, "vera", "wrong")
    officer = client_for(client, staff_user("security officer", "officer"))
    row = LoginFailure.objects.get()
    page = officer.get("/admin/backoffice/loginfailure/").content.decode()
    assert "vera" in page and "unlock" in page
    officer.post("/admin/backoffice/loginfailure/", {"action": "unlock", "_selected_action": [row.pk], "_staff_confirmed": "yes"})
    assert not LoginFailure.objects.exists()
    assert StaffAuditEntry.objects.get(kind=AuditKind.ACTION).action == "unlock"
    officer.logout()
    assert sign_in(client, "vera", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_staff_passwords_pass_djangos_validators(client):
    officer = client_for(client, staff_user("security officer", "officer"))
    weak = officer.post("/admin/auth/user/add/", {"username": "newbie", "password1": "newbie123", "password2": "newbie123", "usable_password": "true"})
    assert weak.status_code == 200 and not User.objects.filter(username="newbie").exists()
    text = weak.content.decode()
    assert "too short" in text or "too similar" in text or "too common" in text
    good = officer.post("/admin/auth/user/add/", {"username": "newbie", "password1": "Correct-horse-battery-9", "password2": "Correct-horse-battery-9", "usable_password": "true"})
    assert good.status_code == 302 and User.objects.filter(username="newbie").exists()
    # The security officer gives roles (groups) but cannot make anyone a superuser.
    user = User.objects.get(username="newbie")
    form = officer.get(f"/admin/auth/user/{user.pk}/change/").content.decode()
    assert 'name="groups"' in form and 'name="is_superuser"' not in form and 'name="user_permissions"' not in form
