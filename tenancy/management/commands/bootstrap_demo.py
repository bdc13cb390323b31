import json

from django.core.management.base import BaseCommand

from tenancy.models import TenantOrganization
from tenancy.services import api_key_create, tenant_create


class Command(BaseCommand):
    help = "On an empty database, create organization DEMO and an API key, and print the key (embedded `make run` only)."

    def handle(self, *args, **options):
        if TenantOrganization.objects.exists():
            self.stdout.write("Organizations exist already; no demo key created. Create one with: python manage.py create_api_key --org <externalId>")
            return
        tenant = tenant_create(external_id="DEMO", name="Demo organization")
        issued = api_key_create(organization=tenant, name="demo")
        self.stdout.write("Created organization DEMO and its first API key (the secret is shown only now):")
        self.stdout.write(json.dumps(issued.as_json()))
