"""The allow-list transfer hook (docs/programs.md); its ABI is abi.py."""
