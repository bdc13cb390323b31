"""The loan remittance vault program (docs/programs.md); its ABI is abi.py."""
