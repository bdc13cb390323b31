"""The project's own onchain programs: C sources compiled to SBF by Debian's clang and
linked by programs/toolchain (docs/programs.md). Each program's folder holds its source,
its ABI (account layouts, instructions, errors: ``abi.py``, the one definition; ``abi.h``
is generated from it), its Python client and the built ``.so``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent
