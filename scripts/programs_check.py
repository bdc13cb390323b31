"""CI: rebuild the onchain programs from source and fail if any committed output differs.

``python3 scripts/programs_check.py`` (.ci/run calls it before ``make test``). With clang
present it runs the build (programs/toolchain/build.py) into a temporary folder and
compares, byte for byte, every ``.so``, every generated ``abi.h`` and
``programs/manifest.json`` with the committed files. Without clang it says so and passes:
the committed programs are what ``make run`` and the tests load, and the tests check that
the headers match the ABI definitions and the manifest matches the programs
(programs/tests/test_abi.py). Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from programs.toolchain import build  # noqa: E402


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "missing"


def main() -> int:
    clang = build.find_clang()
    if clang is None:
        print("programs check: clang not found; the committed programs are not rebuilt (apt-get install -y clang)")
        return 0
    with tempfile.TemporaryDirectory(prefix="programs-check-") as tmp:
        out = Path(tmp)
        try:
            manifest = build.build(out, clang)
        except build.BuildError as exc:
            print(f"programs check: the build failed: {exc}", file=sys.stderr)
            return 1
        outputs = [build.MANIFEST] + [f"{name}/{leaf}" for name in manifest["programs"] for leaf in ("abi.h", f"{name}.so")]
        different = [rel for rel in outputs if not (build.ROOT / rel).exists() or (build.ROOT / rel).read_bytes() != (out / rel).read_bytes()]
        if different:
            committed = build.ROOT / build.MANIFEST
            recorded = json.loads(committed.read_text()).get("compiler") if committed.exists() else "no manifest"
            print("programs check: the committed outputs differ from a rebuild; run `make programs` and commit:", file=sys.stderr)
            for rel in different:
                print(f"  programs/{rel}: committed {_digest(build.ROOT / rel)}, rebuilt {_digest(out / rel)}", file=sys.stderr)
            print(f"  compiler: committed with {recorded!r}, rebuilt with {manifest['compiler']!r}", file=sys.stderr)
            return 1
    print(f"programs check: {len(manifest['programs'])} programs rebuilt byte-identical with {manifest['compiler']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
