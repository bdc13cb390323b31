"""Master-key rotation from the back office: the security officer's page runs the same
service as ``manage.py rotate_master_key`` after a confirmation, and it is audited."""

from __future__ import annotations

import pytest

from custody import services as custody
from custody.models import ManagedKey
from backoffice.models import AuditKind, StaffAuditEntry

from .staff import client_for, staff_user

URL = "/admin/custody/master-key/"


@pytest.fixture
def key_file(settings, tmp_path):
    """A key file of this test's own holding the current keyring, so the rotation's new
    key never reaches the session's."""
    ring = custody.keyring()
    path = tmp_path / "master.key"
    path.write_text("".join(custody.encode_master_key(k) + "\n" for k in ring))
    settings.LEDGER_MASTER_KEY = ""
    settings.LEDGER_MASTER_KEY_FILE = path
    return path


@pytest.mark.django_db
def test_a_security_officer_rotates_the_master_key_after_confirming(client, key_file):
    key = custody.managed_key_generate()
    old = custody.current_master_key_id()
    assert ManagedKey.objects.get(pk=key.pk).master_key_id == old
    assert client_for(client, staff_user("operator")).get(URL).status_code == 403
    officer = client_for(client, staff_user("security officer", "officer"))
    page = officer.get(URL).content.decode()
    assert old in page and 'id="rotate"' in page
    confirm = officer.post(URL, {"confirm": "1"}).content.decode()
    assert 'id="confirm-rotate"' in confirm and custody.current_master_key_id() == old  # nothing yet
    done = officer.post(URL, {"_staff_confirmed": "rotate"}, follow=True).content.decode()
    new = custody.current_master_key_id()
    assert new != old and "Rotated:" in done
    assert ManagedKey.objects.get(pk=key.pk).master_key_id == new
    assert custody.managed_key_export(key=ManagedKey.objects.get(pk=key.pk))  # still opens
    entry = StaffAuditEntry.objects.get(kind=AuditKind.ACTION, action="rotate_master_key")
    assert entry.actor == "officer" and entry.after["current"] == new and entry.before["current"] == old
