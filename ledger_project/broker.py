"""The embedded Celery broker: kombu's filesystem transport with atomic writes.

kombu's transport creates the message file under its final name and then writes it; a
consumer polling the folder can claim (rename) the file in between and read it empty or
half-written — the JSON decode fails and the message, already removed, is lost. Here the
payload goes to a hidden temporary name first and is renamed into place (atomic on one
filesystem), so a consumer only ever sees complete messages. (Lost submissions would still
be found by reconcile_inflight, but only after its delay.)
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        # A leading dot: kombu's consumer matches "<anything>.<queue>.msg" after the first
        # dot, which a hidden name never does.
        temporary = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(temporary, "wb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.replace(temporary, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add message {name!r} to the broker folder") from exc


class Transport(filesystem.Transport):
    Channel = Channel
