"""Staff roles (groups from rules) and the staff audit: every admin change, addition,
deletion and action is recorded with who, what, when, before and after, and nobody —
superusers included — can change or delete an entry (docs/admin.md)."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import connection

from accounts.tests.factories import AccountFactory
from backoffice.models import AuditImmutable, AuditKind, StaffAuditEntry
from backoffice.roles import ROLE_NAMES, SENSITIVE
from instruments.tests.factories import FinancialInstrumentFactory
from tenancy.models import ApiKey
from tenancy.tests.factories import issue_key

from .staff import client_for, staff_user


def perms(role: str) -> set[str]:
    return {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name=role).permissions.select_related("content_type")}


@pytest.mark.django_db
def test_roles_are_groups_whose_permissions_follow_the_rules(capsys):
    call_command("sync_staff_roles")  # what migrate did, again: idempotent
    assert json.loads(capsys.readouterr().out)["roles"].keys() == set(ROLE_NAMES)
    viewer, operator, approver, officer = (perms(r) for r in ROLE_NAMES)
    # The viewer sees every area and the schedule, changes nothing, and sees no sensitive model.
    assert {"accounts.view_account", "transactions.view_transaction", "django_celery_beat.view_periodictask", "django_celery_results.view_taskresult"} <= viewer
    assert not {p for p in viewer if not p.split(".")[1].startswith("view_")}
    assert not {p for p in viewer if f"{p.split('.')[0]}.{p.split('.')[1][5:]}" in SENSITIVE}
    # Each other role is the viewer plus its own.
    assert viewer < operator and viewer < approver and viewer < officer
    assert operator - viewer >= {"backoffice.inactivate_account", "backoffice.pause_instrument", "django_celery_beat.change_periodictask"}
    # Transaction and webhook actions have permissions of their own, not "change" (no field of those records is editable).
    assert operator - viewer >= {"backoffice.submit_transaction", "backoffice.cancel_transaction", "backoffice.redeliver_webhook"}
    assert not {"transactions.change_transaction", "transactions.change_webhookevent", "transactions.change_webhooksubscription"} & operator
    assert approver - viewer == {"transactions.approve_transaction"}
    assert {"tenancy.add_apikey", "backoffice.revoke_api_key", "backoffice.rotate_master_key", "accounts.view_privatekeydisclosure", "backoffice.view_staffauditentry"} <= officer
    assert "transactions.approve_transaction" not in operator | officer and "backoffice.revoke_api_key" not in operator | approver
    # A permission added to a role group by hand is taken away by the next sync.
    Group.objects.get(name="viewer").permissions.add(Permission.objects.get(codename="delete_account"))
    call_command("sync_staff_roles")
    assert "accounts.delete_account" not in perms("viewer")


@pytest.mark.django_db
def test_a_change_in_the_admin_is_audited_with_the_fields_before_and_after(client, tenant):
    operator = staff_user("operator")
    instrument = FinancialInstrumentFactory(tenant=tenant, symbol="ACB30", offchain_data={"desk": "A"})
    url = f"/admin/instruments/financialinstrument/{instrument.pk}/change/"
    response = client_for(client, operator).post(url, {"offchain_data": '{"desk": "B"}', "comments": "moved", "symbol": "HACK"})
    assert response.status_code == 302
    entry = StaffAuditEntry.objects.get(kind=AuditKind.CHANGE)
    assert (entry.actor, entry.actor_id, entry.model, entry.object_ids, entry.ip) == ("operator", operator.pk, "instruments.financialinstrument", [str(instrument.pk)], "127.0.0.1")
    changed = entry.after[str(instrument.pk)]
    assert entry.before[str(instrument.pk)]["offchain_data"] == {"desk": "A"} and changed["offchain_data"] == {"desk": "B"} and changed["comments"] == "moved"
    assert "symbol" not in changed  # chain truth: not editable, not changed


@pytest.mark.django_db
def test_additions_deletions_and_actions_are_audited_and_secrets_never_copied(client, tenant):
    officer = staff_user("security officer", "officer")
    c = client_for(client, officer)
    response = c.post("/admin/tenancy/apikey/add/", {"organization": tenant.pk, "name": "ops", "roles": ["PLATFORM_APPROVE_TRANSACTIONS"]}, follow=True)
    page = response.content.decode()
    key = ApiKey.objects.get(name="ops")
    assert "shown only now" in page and "lsk_" in page
    added = StaffAuditEntry.objects.get(kind=AuditKind.ADD)
    snapshot = added.after[str(key.pk)]
    assert snapshot["key_id"] == key.key_id and snapshot["secret_hash"].startswith("<redacted ") and key.secret_hash not in json.dumps(added.after)
    assert "lsk_" not in json.dumps([added.after, added.outcome])

    # The revoke action: a confirmation page first (nothing done), then the service.
    form = {"action": "revoke", "_selected_action": [key.pk]}
    confirm = c.post("/admin/tenancy/apikey/", form)
    assert confirm.status_code == 200 and "Revoke API keys" in confirm.content.decode() and key.key_id in confirm.content.decode()
    key.refresh_from_db()
    assert key.is_active and not StaffAuditEntry.objects.filter(kind=AuditKind.ACTION).exists()
    done = c.post("/admin/tenancy/apikey/", {**form, "_staff_confirmed": "yes"}, follow=True)
    assert "Revoked 1 API key(s)." in done.content.decode()
    key.refresh_from_db()
    assert not key.is_active
    action = StaffAuditEntry.objects.get(kind=AuditKind.ACTION)
    assert (action.action, action.actor, action.object_ids) == ("revoke", "officer", [str(key.pk)])
    assert action.before == {str(key.pk): {"is_active": True}} and action.after == {str(key.pk): {"is_active": False}}
    assert action.outcome == ["Revoked 1 API key(s)."]

    superuser = staff_user(None, "root", superuser=True)
    other = issue_key().api_key.organization
    other.api_keys.all().delete()
    assert client_for(client, superuser).post(f"/admin/tenancy/tenantorganization/{other.pk}/delete/", {"post": "yes"}).status_code == 302
    deleted = StaffAuditEntry.objects.get(kind=AuditKind.DELETE)
    assert deleted.before[str(other.pk)]["external_id"] == other.external_id and deleted.after is None


@pytest.mark.django_db
def test_the_audit_cannot_be_changed_or_deleted_by_anyone(client):
    superuser = staff_user(None, "root", superuser=True)
    c = client_for(client, superuser)
    entry = StaffAuditEntry.objects.create(kind=AuditKind.ACTION, actor="someone", action="probe")
    base = "/admin/backoffice/staffauditentry/"
    assert c.get(base).status_code == 200 and c.get(f"{base}{entry.pk}/change/").status_code == 200  # visible
    assert c.get(f"{base}add/").status_code == 403
    assert c.post(f"{base}{entry.pk}/change/", {"actor": "nobody"}).status_code == 403
    assert c.post(f"{base}{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert c.post(base, {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"}).status_code in (200, 302)
    model_admin = admin.site._registry[StaffAuditEntry]
    request = type("R", (), {"user": superuser})()
    assert not model_admin.has_change_permission(request, entry) and not model_admin.has_delete_permission(request, entry)
    # The model refuses too, on every database; PostgreSQL's trigger refuses raw SQL.
    entry.actor = "nobody"
    for refused in (entry.save, entry.delete, lambda: StaffAuditEntry.objects.filter(pk=entry.pk).update(actor="x"), lambda: StaffAuditEntry.objects.all().delete()):
        with pytest.raises(AuditImmutable):
            refused()
    if connection.vendor == "postgresql":
        from django.db import DatabaseError, transaction

        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("UPDATE backoffice_staffauditentry SET actor = 'x' WHERE id = %s", [entry.pk])
    assert StaffAuditEntry.objects.get(pk=entry.pk).actor == "someone"


@pytest.mark.django_db
def test_a_viewer_runs_no_action_and_changes_nothing(client, tenant):
    viewer = staff_user("viewer")
    account = AccountFactory(tenant=tenant, name="Ops wallet")
    key = issue_key(tenant).api_key
    c = client_for(client, viewer)
    listing = c.get("/admin/accounts/account/").content.decode()
    assert account.address in listing and 'name="action"' not in listing  # no action offered
    # Posting actions anyway: the actions are not there for the viewer; nothing happens.
    for url, action, pk in (("/admin/accounts/account/", "inactivate", account.pk), ("/admin/tenancy/apikey/", "revoke", key.pk),
                            ("/admin/transactions/transaction/", "cancel_unsubmitted", 1)):
        c.post(url, {"action": action, "_selected_action": [pk], "_staff_confirmed": "yes", "index": "0"})
    account.refresh_from_db()
    key.refresh_from_db()
    assert account.status == "ACTIVE" and key.is_active
    assert c.post(f"/admin/accounts/account/{account.pk}/change/", {"name": "changed"}).status_code == 403
    assert c.get("/admin/backoffice/staffauditentry/").status_code == 403  # the audit is the security officer's
    assert c.get("/admin/django_celery_beat/periodictask/").status_code == 200
    assert not StaffAuditEntry.objects.filter(kind__in=[AuditKind.ACTION, AuditKind.CHANGE]).exists()


@pytest.mark.django_db
def test_chain_truth_fields_are_read_only_in_every_admin():
    from backoffice.options import is_chain_truth

    superuser = staff_user(None, "root", superuser=True)
    request = type("R", (), {"user": superuser, "GET": {}, "POST": {}})()
    checked = 0
    for model, model_admin in admin.site._registry.items():
        chain_fields = {f.name for f in model._meta.concrete_fields if is_chain_truth(f.name)}
        readonly = set(model_admin.get_readonly_fields(request, None))
        assert chain_fields <= readonly, (model, chain_fields - readonly)
        checked += len(chain_fields)
    assert checked > 20
