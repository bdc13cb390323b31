import base64
import json

from django.core.management.base import BaseCommand, CommandError

from accounts.custody import master_key_rotate
from accounts.errors import CustodyError


class Command(BaseCommand):
    help = "Re-wrap every managed key's data key under a new master key (docs/custody.md). Prints JSON."

    def add_arguments(self, parser):
        parser.add_argument("--new-key", default=None, help="base64 32-byte key to rotate to (key-file mode); default: generate one")

    def handle(self, *args, new_key, **options):
        raw = None
        if new_key:
            try:
                raw = base64.urlsafe_b64decode(new_key + "=" * (-len(new_key) % 4))
            except ValueError:
                raise CommandError("--new-key must be base64")
            if len(raw) != 32:
                raise CommandError("--new-key must decode to 32 bytes")
        try:
            count, key_id = master_key_rotate(new_key=raw)
        except CustodyError as exc:
            raise CommandError(exc.message)
        self.stdout.write(json.dumps({"rewrapped": count, "masterKeyId": key_id}))
