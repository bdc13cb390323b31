import json

from django.core.management.base import BaseCommand, CommandError

from ledger_project.api.errors import LedgerError
from tenancy.models import TenantOrganization
from tenancy.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for an organization; prints keyId and the secret (shown only here) as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization external id")
        parser.add_argument("--roles", default="", help="comma-separated roles (docs/auth.md)")
        parser.add_argument("--name", default="")
        parser.add_argument("--rate-limit", type=int, default=None, help="requests per minute for this key")

    def handle(self, *args, org, roles, name, rate_limit, **options):
        organization = TenantOrganization.objects.filter(external_id=org).first()
        if organization is None:
            raise CommandError(f"No organization {org!r}; create it with create_tenant first.")
        role_list = [r.strip() for r in roles.split(",") if r.strip()]
        try:
            issued = api_key_create(organization=organization, roles=role_list, name=name, rate_limit_per_minute=rate_limit)
        except LedgerError as exc:
            raise CommandError(exc.message)
        self.stdout.write(json.dumps(issued.as_json()))
