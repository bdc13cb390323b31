from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

import programs


class Command(BaseCommand):
    help = (
        "Deploy or upgrade the project's onchain programs on a cluster with BPFLoaderUpgradeable transactions "
        "(upgrade authority: a key the service holds; fees and rent from the platform fee payer). Re-running is a no-op "
        "when the bytes on chain equal the build. docs/programs.md, \"Deploying\"."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help=f"A configured cluster ({', '.join(sorted(settings.LEDGER_CLUSTERS))}).")
        parser.add_argument("--program", action="append", choices=programs.NAMES, dest="names", help="Only this program (repeatable); default: all.")
        parser.add_argument("--build-dir", type=Path, default=None, help="Take <name>.so from this folder instead of the committed builds.")

    def handle(self, *args, cluster, names, build_dir, **options):
        from transactions.program_deploy import DeployError, programs_deploy

        if cluster not in settings.LEDGER_CLUSTERS:
            raise CommandError(f"Unknown cluster {cluster!r}: configure its RPC URL in LEDGER_CLUSTERS (docs/configuration.md).")
        try:
            programs_deploy(cluster=cluster, names=names, build_dir=build_dir, log=self.stdout.write)
        except DeployError as exc:
            raise CommandError(str(exc)) from exc
