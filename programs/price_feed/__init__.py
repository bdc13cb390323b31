"""The price feed program (docs/programs.md, "price_feed"); its ABI is abi.py."""
