"""Staff users in their roles, for the back office's tests (backoffice/roles.py)."""

from __future__ import annotations

from django.contrib.auth.models import Group, User

from backoffice.roles import roles_sync

PASSWORD = "Ledger-back-office-2030!"


def staff_user(role: str | None, username: str | None = None, *, password: str = PASSWORD, superuser: bool = False) -> User:
    """A staff user in ``role`` (a group of backoffice.roles; the groups are synced first,
    since a transactional test's flush empties them)."""
    if not Group.objects.filter(name="viewer").exists():
        roles_sync()
    name = username or (role or "superuser").replace(" ", "-")
    user = User.objects.create_user(name, password=password, is_staff=True, is_superuser=superuser)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def client_for(client, user):
    client.force_login(user)
    return client
