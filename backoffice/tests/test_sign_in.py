"""Staff sign-in: Django's password validators, and the lockout after repeated failures
(django-axes: a count per username and address, a cool-down; docs/admin.md "Sign-in")."""

from __future__ import annotations

import re
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
    settings.LEDGER_ADMIN_LOCKOUT_SECONDS = 900


@pytest.mark.django_db
def test_repeated_failures_lock_the_username_from_that_address_even_for_the_right_password(client):
    staff_user("viewer", "vera")
    for attempt in range(3):
        assert sign_in(client, "Vera", "wrong").status_code == 200  # case variants share one counter
    row = LoginFailure.objects.get()
    assert (row.username, row.ip_address, row.failures_since_start) == ("vera", "127.0.0.1", 3)
    assert "wrong" not in row.post_data and "Vera" not in row.post_data  # axes masks what it keeps of the form
    locked = sign_in(client, "vera", PASSWORD)
    text = locked.content.decode()
    assert locked.status_code == 200 and "Too many failed sign-ins" in text and "_auth_user_id" not in client.session
    until = (row.attempt_time + timedelta(seconds=900)).strftime("%H:%M:%S")
    assert f"Try again after {until} UTC" in text
    assert LoginFailure.objects.get().failures_since_start == 3  # the refused attempt is not counted and does not lengthen the lock
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
    LoginFailure.objects.update(attempt_time=timezone.now() - timedelta(seconds=901))
    assert sign_in(client, "vera", PASSWORD).status_code == 302
    assert not LoginFailure.objects.exists()
    # Failures further apart than the cool-down never lock: each starts the count again.
    client.logout()
    sign_in(client, "vera", "wrong")
    sign_in(client, "vera", "wrong")
    LoginFailure.objects.update(attempt_time=timezone.now() - timedelta(seconds=901))
    sign_in(client, "vera", "wrong")
    assert LoginFailure.objects.get().failures_since_start == 1
    assert sign_in(client, "vera", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_the_count_spans_browsers_and_only_the_sign_in_form_counts(client):
    """axes keeps a row per user agent but locks on their sum; an API call with a wrong key
    is not a sign-in (the API has no password)."""
    staff_user("viewer", "vera")
    for agent in ("firefox", "chromium", "curl"):
        client.post(LOGIN, {"username": "vera", "password": "wrong"}, REMOTE_ADDR="127.0.0.1", HTTP_USER_AGENT=agent)
    assert LoginFailure.objects.count() == 3
    assert "Too many failed sign-ins" in sign_in(client, "vera", PASSWORD).content.decode()
    assert client.get("/api/v1/accounts", HTTP_AUTHORIZATION="Bearer lsk_not-a-key").status_code == 401
    assert LoginFailure.objects.count() == 3
    # The officer's list shows the lock on every row of the pair, though each row holds one failure.
    officer = client_for(client, staff_user("security officer", "officer"))
    page = officer.get("/admin/backoffice/loginfailure/").content.decode()
    cells = re.findall(r'class="field-locked_until[^"]*">([^<]*)<', page)
    assert len(cells) == 3 and "-" not in cells, cells


@pytest.mark.django_db
def test_a_security_officer_unlocks_a_locked_sign_in(client):
    staff_user("viewer", "vera")
    for _ in range(3):
        sign_in(client, "vera", "wrong")
    officer = client_for(client, staff_user("security officer", "officer"))
    row = LoginFailure.objects.get()
    page = officer.get("/admin/backoffice/loginfailure/").content.decode()
    assert "vera" in page and "unlock" in page
    assert "locked until" in page.lower()
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


@pytest.mark.django_db(transaction=True)
def test_upgrading_carries_the_hand_written_lockout_counts_into_django_axes(settings):
    """Migration 0091: a pair locked before the upgrade is still locked after it (and the
    way back copies the counts into the old table)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate([("backoffice", "0090_balance_samples")])
    old = MigrationExecutor(connection).loader.project_state([("backoffice", "0090_balance_samples")]).apps.get_model("backoffice", "LoginFailure")
    now = timezone.now()
    old.objects.create(username="vera", ip="127.0.0.1", failures=3, first_failure_at=now - timedelta(seconds=60), last_failure_at=now - timedelta(seconds=10),
                       locked_until=now + timedelta(seconds=890))
    MigrationExecutor(connection).migrate(leaves)

    row = LoginFailure.objects.get()
    assert (row.username, row.ip_address, row.failures_since_start, row.attempt_time) == ("vera", "127.0.0.1", 3, now - timedelta(seconds=10))
    staff_user("viewer", "vera")
    from django.test import Client
    assert "Too many failed sign-ins" in sign_in(Client(), "vera", PASSWORD).content.decode()

    MigrationExecutor(connection).migrate([("backoffice", "0090_balance_samples")])
    back = MigrationExecutor(connection).loader.project_state([("backoffice", "0090_balance_samples")]).apps.get_model("backoffice", "LoginFailure").objects.get()
    assert (back.username, back.ip, back.failures) == ("vera", "127.0.0.1", 3)
    assert back.locked_until == now - timedelta(seconds=10) + timedelta(seconds=900)  # still locked on the way back
    MigrationExecutor(connection).migrate(leaves)


def test_the_retired_window_setting_is_reported_if_still_set(monkeypatch):
    from django.core.management import call_command

    from backoffice.lockout import retired_window_check

    assert retired_window_check(None) == []
    monkeypatch.setenv("LEDGER_ADMIN_LOCKOUT_WINDOW_SECONDS", "600")
    [warning] = retired_window_check(None)
    assert warning.id == "backoffice.W001" and "no longer read" in warning.msg
    call_command("check")  # a warning, not an error: the service still starts
