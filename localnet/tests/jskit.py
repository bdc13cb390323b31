"""npm packages for the tests that drive the local node with unmodified JavaScript SDKs."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"


def npm_installed(package_dir: Path, name: str, probe: str) -> Path:
    """``package_dir``'s dependencies at the versions its package-lock.json pins, installed
    with `npm ci` into a cache under var/ (kept between runs, keyed by the lock file; one
    install at a time, parallel runs share it), with its .mjs scripts copied beside them.
    ``probe``: a package whose presence means the install is complete."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    manifest, lock = (package_dir / "package.json").read_bytes(), (package_dir / "package-lock.json").read_bytes()
    var = Path(os.environ.get("LEDGER_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")
    target = var / "npm" / f"{name}-{hashlib.sha256(manifest + lock).hexdigest()[:16]}"
    target.mkdir(parents=True, exist_ok=True)
    with open(var / "npm" / ".install.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not (target / "node_modules" / probe / "package.json").exists():
            (target / "package.json").write_bytes(manifest)
            (target / "package-lock.json").write_bytes(lock)
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", "--cache", str(var / "npm" / "cache")], cwd=target, check=True, timeout=600,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for script in package_dir.glob("*.mjs"):
        shutil.copy(script, target / script.name)
    return target
