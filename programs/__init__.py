"""The project's own onchain programs: C sources compiled to SBF by Debian's clang and
linked by programs/toolchain (docs/programs.md). Each program's folder holds its source,
its ABI (account layouts, instructions, errors: ``abi.py``, the one definition; ``abi.h``
is generated from it), its Python client and the built ``.so``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent

#: The programs every cluster runs, by name (the folder, the .so and the key of
#: settings.LEDGER_PROGRAM_IDS).
NAMES = ("allowlist_hook", "loan_vault", "price_feed", "lending")

#: Where the embedded node loads them at genesis (localnet/programs.py) and
#: the default ids of CHAIN_LOCALNET in settings.LEDGER_PROGRAM_IDS. Readable, off the
#: Ed25519 curve (no private key exists for them), fixed so that every local node, test
#: node and configuration agrees without a deployment (docs/programs.md, "Program ids").
LOCALNET_PROGRAM_IDS = {
    "allowlist_hook": "A11owListHook111111111111111111111111111111",
    "loan_vault": "LoanVau1t1111111111111111111111111111111111",
    "price_feed": "PriceFeed1111111111111111111111111111111111",
    "lending": "Lending111111111111111111111111111111111111",
}


def program_bytes(name: str, build_dir: Path | None = None) -> bytes:
    """The built program ``name`` (the committed ``programs/<name>/<name>.so``, or the one
    in ``build_dir`` — a flat folder of ``<name>.so`` files)."""
    if name not in NAMES:
        raise KeyError(f"unknown program {name!r}; the project's programs are {', '.join(NAMES)}")
    path = (Path(build_dir) / f"{name}.so") if build_dir is not None else ROOT / name / f"{name}.so"
    return path.read_bytes()
