"""Staff roles: Django groups with permissions (docs/admin.md, "Roles").

The roles are stated as rules over the installed models rather than lists of rows, so a
model added by a later migration lands in the right roles when they are synced again —
after every ``migrate`` (post_migrate), by ``manage.py sync_staff_roles``, and first by
the data migration 0051_admin_staff_roles. A sync sets each group's permissions to exactly
what the rules give (a permission granted by hand to a role group is removed; grant extra
permissions to users, not to role groups).

- viewer: sees every area and the scheduling pages, changes nothing;
- operator: viewer + the actions on areas (inactivate, pause/unpause, freeze, re-read,
  submit held / resubmit / reconcile / cancel transactions, redeliver webhooks), the
  offchain fields of records, and the periodic tasks;
- approver: viewer + approve/reject transactions held for approval;
- security officer: viewer + API keys (create, revoke), the staff audit, private-key export
  audit, custody keys and master-key rotation, staff users and sign-in lockouts.

Chain-truth fields are read-only for everybody whatever the permissions (the site enforces
it, backoffice/options.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

VIEWER, OPERATOR, APPROVER, SECURITY_OFFICER = "viewer", "operator", "approver", "security officer"
ROLE_NAMES = (VIEWER, OPERATOR, APPROVER, SECURITY_OFFICER)

#: apps whose every model staff may look at (their view permissions)
AREA_APPS = ("tenancy", "custody", "accounts", "instruments", "positions", "loans", "marketdata", "transactions", "webhooks", "lookup_tables", "vaults", "django_celery_beat", "django_celery_results")
#: models only the security officer sees (key material facts, audits, request bodies)
SENSITIVE = frozenset({
    "tenancy.idempotencyrecord", "custody.managedkey", "accounts.privatekeydisclosure",
    "backoffice.staffauditentry", "backoffice.loginfailure", "auth.user", "auth.group",
})


@dataclass(frozen=True)
class RoleSpec:
    name: str
    #: "app_label.codename" permissions granted on top of the viewer's
    grants: tuple[str, ...] = ()
    #: app labels whose add/change/delete permissions are all granted
    manage_apps: tuple[str, ...] = ()
    #: sensitive models this role may view
    views_sensitive: tuple[str, ...] = field(default=())


ROLES: dict[str, RoleSpec] = {
    VIEWER: RoleSpec(VIEWER, grants=("backoffice.view_heartbeat",)),
    OPERATOR: RoleSpec(OPERATOR, grants=(
        "backoffice.view_heartbeat",
        "backoffice.inactivate_account", "backoffice.pause_instrument", "backoffice.sync_instrument", "backoffice.freeze_position",
        # Transactions: submit held, resubmit / reconcile stuck ones, cancel unsubmitted —
        # permissions of their own, not "change transaction" (no transaction field is
        # editable; an action is not an edit).
        "backoffice.submit_transaction", "backoffice.cancel_transaction",
        # Webhooks (docs/webhooks.md): redeliver events, disable / enable subscriptions.
        "backoffice.redeliver_webhook",
        # Offchain fields of records (chain truth stays read-only).
        "accounts.change_account", "instruments.change_financialinstrument",
        # Market data (docs/marketdata.md): refresh a data source now.
        "marketdata.refresh_onchaindatasource",
    ), manage_apps=("django_celery_beat",)),
    APPROVER: RoleSpec(APPROVER, grants=("backoffice.view_heartbeat", "transactions.approve_transaction")),
    SECURITY_OFFICER: RoleSpec(SECURITY_OFFICER, grants=(
        "backoffice.view_heartbeat",
        "tenancy.add_apikey", "tenancy.change_apikey", "backoffice.revoke_api_key", "backoffice.rotate_master_key",
        "backoffice.unlock_login", "auth.add_user", "auth.change_user",
    ), views_sensitive=tuple(sorted(SENSITIVE))),
}


def role_permissions(spec: RoleSpec, permissions) -> list:
    """The Permission rows ``spec`` grants, out of ``permissions`` (every Permission with
    its content type selected)."""
    wanted = set(spec.grants)
    chosen = []
    for perm in permissions:
        ct = perm.content_type
        label = f"{ct.app_label}.{ct.model}"
        full = f"{ct.app_label}.{perm.codename}"
        is_view = perm.codename.startswith("view_")
        if full in wanted:
            chosen.append(perm)
        elif is_view and ct.app_label in AREA_APPS and label not in SENSITIVE:
            chosen.append(perm)
        elif is_view and label in spec.views_sensitive:
            chosen.append(perm)
        elif ct.app_label in spec.manage_apps:
            chosen.append(perm)
    return chosen


def roles_sync(*, apps=None, using: str = "default") -> dict[str, int]:
    """Create the role groups and set their permissions to exactly the rules' (see the
    module docstring); returns role → number of permissions. ``apps``: a migration's
    historical registry (the data migration), else the live one."""
    if apps is None:
        from django.apps import apps as live_apps

        apps = live_apps
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permissions = list(Permission.objects.using(using).select_related("content_type"))
    counts = {}
    for name, spec in ROLES.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        chosen = role_permissions(spec, permissions)
        group.permissions.set(chosen)
        counts[name] = len(chosen)
    return counts


def roles_sync_after_migrate(sender=None, using: str = "default", apps=None, plan=None, **kwargs) -> None:
    if plan is None:
        # A flush (tests empty the database between transactional tests), not a migrate:
        # roles are synced again by the next migrate or sync_staff_roles.
        return
    # post_migrate is sent app by app in INSTALLED_APPS order, and auth creates each app's
    # permissions on its own signal: those of apps listed after this one are created here.
    from django.apps import apps as live_apps
    from django.contrib.auth.management import create_permissions

    configs = list(live_apps.get_app_configs())
    for app_config in configs[configs.index(live_apps.get_app_config("backoffice")) + 1:]:
        create_permissions(app_config, verbosity=0, using=using)
    roles_sync(using=using)
