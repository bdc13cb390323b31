"""python -m faultfront --upstream URL --profile NAME|FILE.json [--seed N] [--port P] [--ws-port W]

Serves JSON-RPC on --port in front of --upstream with the profile's faults (docs/chain.md
"The fault front"). --ws-port relays websocket connections to the node's PubSub port
(--upstream-ws, default the upstream's port + 1) untouched. SIGTERM or SIGINT: stops at
once (hanging answers and pending late sends are abandoned).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from urllib.parse import urlsplit

from .front import Front
from .profiles import PROFILES, load_profile
from .server import FrontServer, TcpRelay
from .upstream import Upstream


def main(argv=None, out=sys.stdout) -> None:
    parser = argparse.ArgumentParser(prog="python -m faultfront", description=__doc__.splitlines()[2])
    parser.add_argument("--upstream", required=True, help="the node's JSON-RPC URL")
    parser.add_argument("--profile", default="passthrough", help=f"one of {', '.join(PROFILES)}, or a JSON file")
    parser.add_argument("--seed", type=int, default=None, help="every random choice comes from it (default: the profile's, else 0)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--ws-port", type=int, default=None, help="relay websocket connections from this port (off by default)")
    parser.add_argument("--upstream-ws", default=None, help="host:port of the node's PubSub (default: upstream port + 1)")
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.profile)
    except ValueError as exc:
        parser.error(str(exc))
    seed = args.seed if args.seed is not None else int(profile.get("seed", 0))
    front = Front(Upstream(args.upstream), profile, seed)
    server = FrontServer((args.host, args.port), front)
    relay = None
    if args.ws_port is not None:
        up = urlsplit(args.upstream)
        target = args.upstream_ws or f"{up.hostname}:{(up.port or 80) + 1}"
        host, _, port = target.rpartition(":")
        relay = TcpRelay(args.host, args.ws_port, (host, int(port)))
        threading.Thread(target=relay.serve, daemon=True).start()

    def stop(signum, frame) -> None:
        server.stopping.set()
        if relay:
            relay.stop()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ws = f" and ws relay on {args.host}:{relay.port}" if relay else ""
    print(f"faultfront listening on http://{args.host}:{server.server_address[1]}{ws} in front of {args.upstream} "
          f"(profile {profile['name']}, seed {seed})", file=out, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
