import base64
import json

from django.core.management.base import BaseCommand, CommandError

from custody.services import master_key_retire, master_key_rotate
from custody.errors import CustodyError


class Command(BaseCommand):
    help = (
        "Re-seal every sealed value (managed keys' data keys, webhook credentials) under the current master key; "
        "old keys stay in the keyring until retired with --retire KEY_ID, which first proves nothing references them "
        "(docs/custody.md). Prints JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--new-key", default=None, help="base64 32-byte key to rotate to (key-file mode); default: generate one")
        parser.add_argument("--retire", default=None, metavar="KEY_ID", help="drop this old master key once no stored value references it (never done by rotation itself)")

    def handle(self, *args, new_key, retire, **options):
        if retire:
            if new_key:
                raise CommandError("--retire and --new-key are separate steps")
            try:
                left = master_key_retire(key_id=retire)
            except CustodyError as exc:
                raise CommandError(exc.message)
            self.stdout.write(json.dumps({"retired": retire, "keysInKeyring": left}))
            return
        raw = None
        if new_key:
            try:
                raw = base64.urlsafe_b64decode(new_key + "=" * (-len(new_key) % 4))
            except ValueError:
                raise CommandError("--new-key must be base64")
            if len(raw) != 32:
                raise CommandError("--new-key must decode to 32 bytes")
        try:
            result = master_key_rotate(new_key=raw)
        except CustodyError as exc:
            raise CommandError(exc.message)
        self.stdout.write(json.dumps({
            "rewrapped": result.rewrapped, "resealedSecrets": result.resealed, "masterKeyId": result.master_key_id,
            "stillReferenced": result.still_referenced,
        }))
        if result.still_referenced:
            raise CommandError(f"values are still sealed under old keys {result.still_referenced}: run the rotation again before retiring them")
