"""The embedded broker never hands a consumer a half-written message."""

import threading
from queue import Empty

from kombu import Connection

from ledger_project.broker import Transport


def test_concurrent_writer_and_reader_lose_nothing(tmp_path):
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path), "store_processed": False, "polling_interval": 0.01}
    payload = "x" * 200_000  # large enough that writing takes a while
    sent = 300
    received, errors = [], []

    def read():
        with Connection(transport=Transport, transport_options=options) as conn:
            channel = conn.default_channel
            while len(received) < sent:
                try:
                    received.append(channel._get("q")["n"])
                except Empty:
                    continue
                except Exception as exc:  # a torn message: what kombu's own transport can hand out
                    errors.append(exc)
                    return

    reader = threading.Thread(target=read)
    reader.start()
    with Connection(transport=Transport, transport_options=options) as conn:
        channel = conn.default_channel
        for n in range(sent):
            channel._put("q", {"n": n, "body": payload})
    reader.join(60)
    assert not errors and sorted(received) == list(range(sent))
