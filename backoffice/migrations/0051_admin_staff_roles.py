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
        ("tenancy", "__latest__"),
        ("accounts", "__latest__"),
        ("instruments", "__latest__"),
        ("positions", "__latest__"),
        ("transactions", "__latest__"),
        ("django_celery_beat", "__latest__"),
        ("django_celery_results", "__latest__"),
    ]

    operations = [migrations.RunPython(roles_create, roles_remove)]
