"""python -m transactions.localnet [--host H] [--port P] [--data-dir D]: run the node."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path


def serve(host: str, port: int, data_dir: Path, out=sys.stdout) -> None:
    from .node import Node
    from .server import LocalnetServer

    node = Node(data_dir)
    server = LocalnetServer((host, port), node)
    node.start_clock()
    stopping = threading.Event()

    def stop(signum, frame):
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"localnet listening on http://{host}:{server.server_address[1]} (data: {data_dir}, genesis {node.genesis_hash})", file=out, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        node.stop()
        server.server_close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transactions.localnet")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8899)
    parser.add_argument("--data-dir", type=Path, default=Path("var/localnet"))
    args = parser.parse_args(argv)
    serve(args.host, args.port, args.data_dir)


if __name__ == "__main__":
    main()
