"""Run a command with one local SVM node up for its whole duration.

`make test` uses it so every pytest-xdist worker shares one node
(LEDGER_TEST_LOCALNET_URL); the node's data lives in a temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localnet.testing import LocalnetProcess  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ledger-localnet-") as tmp:
        node = LocalnetProcess(Path(tmp) / "data", log_path=Path(tmp) / "node.log").start()
        try:
            # Tests run in embedded mode (a generated master key file under var/) unless
            # the caller says otherwise (docs/custody.md).
            env = {"LEDGER_EMBEDDED": "1", **os.environ, "LEDGER_TEST_LOCALNET_URL": node.url}
            return subprocess.call(sys.argv[1:], env=env)
        finally:
            node.stop()


if __name__ == "__main__":
    raise SystemExit(main())
