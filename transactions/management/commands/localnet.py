from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the embedded local SVM cluster (Solana JSON-RPC over LiteSVM), durable in --data-dir."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.LEDGER_LOCALNET_HOST)
        parser.add_argument("--port", type=int, default=settings.LEDGER_LOCALNET_PORT)
        parser.add_argument("--data-dir", type=Path, default=Path(settings.LEDGER_LOCALNET_DATA_DIR))
        parser.add_argument("--token-2022-native-mint", action="store_true", default=settings.LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT,
                            help="start with Token-2022's native mint (LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT)")
        parser.add_argument("--rpc-pubsub-enable-block-subscription", action="store_true", default=settings.LEDGER_LOCALNET_BLOCK_SUBSCRIPTION,
                            help="serve blockSubscribe (LEDGER_LOCALNET_BLOCK_SUBSCRIPTION)")

    def handle(self, *args, host, port, data_dir, token_2022_native_mint, rpc_pubsub_enable_block_subscription, **options):
        from localnet.__main__ import serve

        serve(host, port, data_dir, out=self.stdout, token_2022_native_mint=token_2022_native_mint, enable_block_subscription=rpc_pubsub_enable_block_subscription)
