"""Build every onchain program: ``python3 -m programs.toolchain.build`` (``make programs``).

For each folder ``programs/<name>/`` with an ``abi.py`` and a ``<name>.c``: generate ``abi.h`` from the ABI, compile
the folder's ``*.c`` with clang for SBPF v0, link them (link.py) into ``<name>.so``, and
record every output's size and SHA-256 with the compiler version in
``programs/manifest.json``. Sources are staged with the freshly generated header in a
temporary folder, so a build never reads a stale ``abi.h``; the outputs depend only on the
sources and the compiler, so a rebuild is byte-identical (``--out DIR`` writes them
elsewhere: scripts/programs_check.py compares such a rebuild with the committed files).

Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .link import LinkError, link

ROOT = Path(__file__).resolve().parent.parent  # programs/
INCLUDE = ROOT / "include"
#: Always -mcpu=v2: newer LLVM defaults to v3, whose 32-bit jumps SBPF v0 rejects.
CFLAGS = ["--target=bpfel", "-mcpu=v2", "-O2", "-fno-builtin", "-ffreestanding", "-fno-stack-protector", "-Wall", "-Werror", "-std=c11"]
MANIFEST = "manifest.json"


class BuildError(Exception):
    pass


def find_clang() -> str | None:
    explicit = os.environ.get("CLANG")
    if explicit:
        return explicit if shutil.which(explicit) else None
    return shutil.which("clang")


def clang_version(clang: str) -> str:
    out = subprocess.run([clang, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def program_names() -> list[str]:
    return sorted(d.name for d in ROOT.iterdir() if d.is_dir() and (d / "abi.py").is_file() and (d / f"{d.name}.c").is_file())


def header(name: str) -> str:
    module = importlib.import_module(f"programs.{name}.abi")
    return module.ABI.c_header()


def build_program(name: str, clang: str, workdir: Path) -> tuple[str, bytes]:
    """(abi.h text, .so bytes) of one program."""
    source_dir = ROOT / name
    sources = sorted(source_dir.glob("*.c"))
    if not sources:
        raise BuildError(f"programs/{name}: no C sources")
    stage = workdir / name
    stage.mkdir(parents=True)
    text = header(name)
    (stage / "abi.h").write_text(text)
    for extra in sorted(source_dir.glob("*.h")):
        if extra.name != "abi.h":
            shutil.copy(extra, stage / extra.name)
    objects = []
    for src in sources:
        shutil.copy(src, stage / src.name)
        obj = stage / (src.stem + ".o")
        cmd = [clang, *CFLAGS, "-I", str(INCLUDE), "-c", src.name, "-o", obj.name]
        result = subprocess.run(cmd, cwd=stage, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"programs/{name}/{src.name}: clang failed\n{result.stderr}")
        objects.append((f"{name}/{obj.name}", obj.read_bytes()))
    try:
        return text, link(objects)
    except LinkError as exc:
        raise BuildError(f"programs/{name}: {exc}") from exc


def build(out: Path = ROOT, clang: str | None = None) -> dict:
    """Build every program into ``out`` (same relative paths as programs/); the manifest."""
    clang = clang or find_clang()
    if clang is None:
        raise BuildError("clang not found: install Debian's clang (apt-get install -y clang) or set CLANG")
    manifest = {"compiler": clang_version(clang), "flags": CFLAGS, "programs": {}}
    with tempfile.TemporaryDirectory(prefix="sbf-build-") as tmp:
        for name in program_names():
            text, so = build_program(name, clang, Path(tmp))
            target = out / name
            target.mkdir(parents=True, exist_ok=True)
            _write(target / "abi.h", text.encode())
            _write(target / f"{name}.so", so)
            manifest["programs"][name] = {"so": f"programs/{name}/{name}.so", "size": len(so), "sha256": hashlib.sha256(so).hexdigest()}
    _write(out / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    return manifest


def _write(path: Path, data: bytes) -> None:
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="where to write the outputs (default: beside the sources)")
    args = parser.parse_args(argv)
    try:
        manifest = build(args.out)
    except BuildError as exc:
        print(f"programs: {exc}", file=sys.stderr)
        return 1
    for name, info in manifest["programs"].items():
        print(f"programs/{name}/{name}.so  {info['size']} bytes  sha256 {info['sha256'][:16]}…")
    return 0


if __name__ == "__main__":
    sys.exit(main())
