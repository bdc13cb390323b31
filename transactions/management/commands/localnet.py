from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the embedded local SVM cluster (Solana JSON-RPC over LiteSVM), durable in --data-dir."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.LEDGER_LOCALNET_HOST)
        parser.add_argument("--port", type=int, default=settings.LEDGER_LOCALNET_PORT)
        parser.add_argument("--data-dir", type=Path, default=Path(settings.LEDGER_LOCALNET_DATA_DIR))

    def handle(self, *args, host, port, data_dir, **options):
        from localnet.__main__ import serve

        serve(host, port, data_dir, out=self.stdout)
