"""python -m localnet [--host H] [--port P] [--data-dir D] [...]: run the node.

JSON-RPC on --port, PubSub on --ws-port (default: port + 1, the Solana convention).
Settings: docs/localnet.md, "Settings".
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from solders.pubkey import Pubkey

from .node import SAMPLE_SECONDS, SLOT_SECONDS
from .pubsub import MAX_BUFFERED_BYTES, MAX_MESSAGE_BYTES, MAX_SUBSCRIPTIONS_PER_CONNECTION


def serve(host: str, port: int, data_dir: Path, out=sys.stdout, *, ws_port: int | None = None, sample_seconds: float = SAMPLE_SECONDS, slot_seconds: float = SLOT_SECONDS,
          max_subscriptions: int = MAX_SUBSCRIPTIONS_PER_CONNECTION, max_message_bytes: int = MAX_MESSAGE_BYTES, max_buffered_bytes: int = MAX_BUFFERED_BYTES,
          bpf_programs: tuple = (), enable_block_subscription: bool = False, token_2022_native_mint: bool = False) -> None:
    from .node import Node
    from .server import LocalnetServer

    node = Node(data_dir, slot_seconds=slot_seconds, sample_seconds=sample_seconds, bpf_programs=bpf_programs, token_2022_native_mint=token_2022_native_mint)
    server = LocalnetServer(node, max_subscriptions=max_subscriptions, max_message_bytes=max_message_bytes, max_buffered_bytes=max_buffered_bytes,
                            enable_block_subscription=enable_block_subscription)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)

        def ready(srv) -> None:
            print(f"localnet listening on http://{host}:{srv.port} and ws://{host}:{srv.ws_port} (data: {data_dir}, genesis {node.genesis_hash})", file=out, flush=True)

        await server.run(host, port, ready=ready, stop=stop, ws_port=ws_port)

    asyncio.run(main())


def _positive(text: str) -> float:
    value = float(text)
    if not 0.01 <= value <= 60:
        raise argparse.ArgumentTypeError("between 0.01 and 60 seconds")
    return value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localnet")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8899)
    parser.add_argument("--ws-port", type=int, default=None, help="PubSub websocket port (default: --port + 1)")
    parser.add_argument("--data-dir", type=Path, default=Path("var/localnet"))
    parser.add_argument("--slot-seconds", type=_positive, default=SLOT_SECONDS, help="slot length (a new blockhash each slot)")
    parser.add_argument("--sample-seconds", type=float, default=SAMPLE_SECONDS, help="getRecentPerformanceSamples period")
    parser.add_argument("--ws-max-subscriptions", type=int, default=MAX_SUBSCRIPTIONS_PER_CONNECTION, help="subscriptions per websocket connection")
    parser.add_argument("--ws-max-message-bytes", type=int, default=MAX_MESSAGE_BYTES, help="largest incoming websocket message")
    parser.add_argument("--ws-max-buffered-bytes", type=int, default=MAX_BUFFERED_BYTES, help="unread notifications before a client is disconnected")
    parser.add_argument("--bpf-program", nargs=2, action="append", default=[], metavar=("ADDRESS", "SO_FILE"),
                        help="load the ELF at ADDRESS at genesis, upgradeable with no authority (solana-test-validator's flag; repeatable)")
    parser.add_argument("--rpc-pubsub-enable-block-subscription", action="store_true",
                        help="serve blockSubscribe (Agave's flag: off by default, as on a validator)")
    parser.add_argument("--token-2022-native-mint", action="store_true",
                        help="start with Token-2022's native mint, as mainnet and devnet have it (a fresh validator does not)")
    args = parser.parse_args(argv)
    bpf_programs = []
    for address, path in args.bpf_program:
        try:
            bpf_programs.append((Pubkey.from_string(address), Path(path).read_bytes()))
        except (ValueError, OSError) as exc:
            parser.error(f"--bpf-program {address} {path}: {exc}")
    serve(args.host, args.port, args.data_dir, ws_port=args.ws_port, slot_seconds=args.slot_seconds, sample_seconds=args.sample_seconds, max_subscriptions=args.ws_max_subscriptions,
          max_message_bytes=args.ws_max_message_bytes, max_buffered_bytes=args.ws_max_buffered_bytes, bpf_programs=tuple(bpf_programs),
          enable_block_subscription=args.rpc_pubsub_enable_block_subscription, token_2022_native_mint=args.token_2022_native_mint)


if __name__ == "__main__":
    main()
