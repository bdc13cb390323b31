import json

from django.core.management.base import BaseCommand

from backoffice.roles import roles_sync
from backoffice.scheduling import beat_schedule_seed


class Command(BaseCommand):
    help = (
        "Create the staff role groups (viewer, operator, approver, security officer) and set their permissions to exactly "
        "what backoffice/roles.py states; also seeds missing periodic tasks from settings. Runs after every migrate; "
        "run it by hand after changing a role by hand. Prints JSON: role → number of permissions (docs/admin.md)."
    )

    def handle(self, *args, **options):
        from django.apps import apps
        from django.contrib.auth.management import create_permissions

        for app_config in apps.get_app_configs():
            create_permissions(app_config, verbosity=0)
        self.stdout.write(json.dumps({"roles": roles_sync(), "periodicTasksSeeded": beat_schedule_seed()}))
