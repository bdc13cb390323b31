"""The embedded local SVM cluster: LiteSVM behind the standard Solana JSON-RPC (docs/localnet.md)."""
