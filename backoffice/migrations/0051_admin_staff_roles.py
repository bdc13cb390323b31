"""The staff role groups (backoffice/roles.py): viewer, operator, approver, security
officer. Permissions are created first (Django creates them only after migrate, in
post_migrate); the same sync runs again after every migrate and with
``manage.py sync_staff_roles``."""

from django.db import migrations


def roles_create(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    from backoffice.roles import roles_sync

    using = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=using)
        app_config.models_module = None
    roles_sync(apps=apps, using=using)


def roles_remove(apps, schema_editor):
    from backoffice.roles import ROLE_NAMES

    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(name__in=ROLE_NAMES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0050_admin_initial"),
        ("auth", "__latest__"),
        ("contenttypes", "__latest__"),
        # Pinned to the migrations of the day: "__latest__" here would make every later
        # migration of these apps a dependency of an applied one, and an upgraded database
        # would refuse to migrate (InconsistentMigrationHistory). Models added later get
        # their roles from the post_migrate sync.
        ("tenancy", "0002_a_idempotency_response_bytes"),
        ("accounts", "0007_unscoped_manager"),
        ("instruments", "0005_prefetch_synced_slot"),
        ("positions", "0002_balance_slot_index"),
        ("transactions", "0007_pump_lease"),
        ("django_celery_beat", "__latest__"),
        ("django_celery_results", "__latest__"),
    ]

    operations = [migrations.RunPython(roles_create, roles_remove)]
