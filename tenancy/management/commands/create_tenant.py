import json

from django.core.management.base import BaseCommand, CommandError

from ledger_project.api.errors import LedgerError
from tenancy.services import tenant_create


class Command(BaseCommand):
    help = "Create a tenant organization; prints it as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--external-id", required=True)
        parser.add_argument("--name", default="")

    def handle(self, *args, external_id, name, **options):
        try:
            tenant = tenant_create(external_id=external_id, name=name)
        except LedgerError as exc:
            raise CommandError(exc.message)
        self.stdout.write(json.dumps({"externalId": tenant.external_id, "name": tenant.name, "offchainId": str(tenant.offchain_id)}))
