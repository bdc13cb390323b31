"""python -m transactions.localnet [--host H] [--port P] [--data-dir D]: run the node."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path


def serve(host: str, port: int, data_dir: Path, out=sys.stdout) -> None:
    from .node import Node
    from .server import LocalnetServer

    node = Node(data_dir)
    server = LocalnetServer(node)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)

        def ready(srv) -> None:
            print(f"localnet listening on http://{host}:{srv.port} (data: {data_dir}, genesis {node.genesis_hash})", file=out, flush=True)

        await server.run(host, port, ready=ready, stop=stop)

    asyncio.run(main())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transactions.localnet")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8899)
    parser.add_argument("--data-dir", type=Path, default=Path("var/localnet"))
    args = parser.parse_args(argv)
    serve(args.host, args.port, args.data_dir)


if __name__ == "__main__":
    main()
