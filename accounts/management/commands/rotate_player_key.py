import base64
import json

from django.core.management.base import BaseCommand, CommandError

from custody.errors import CustodyError
from accounts.mpc.keyring import player_key_retire, player_key_rotate


class Command(BaseCommand):
    help = (
        "Re-wrap every sealed value of one backend FROST player (its shares, DKG state, nonces) under the player's current key; "
        "--retire KEY_ID drops an old key once nothing references it (docs/threshold-signing.md). Prints JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--player", required=True, help="the backend player's code (LEDGER_MPC_BACKEND_PLAYERS)")
        parser.add_argument("--new-key", default=None, help="base64 32-byte key to rotate to (key-file mode); default: generate one")
        parser.add_argument("--retire", default=None, metavar="KEY_ID", help="drop this old key of the player once no stored value references it")

    def handle(self, *args, player, new_key, retire, **options):
        try:
            if retire:
                self.stdout.write(json.dumps({"player": player, "retired": retire, "keysInKeyring": player_key_retire(player, kid=retire)}))
                return
            raw = None
            if new_key:
                raw = base64.urlsafe_b64decode(new_key + "=" * (-len(new_key) % 4))
                if len(raw) != 32:
                    raise CommandError("--new-key must decode to 32 bytes")
            self.stdout.write(json.dumps(player_key_rotate(player, new_key=raw)))
        except CustodyError as exc:
            raise CommandError(exc.message)
