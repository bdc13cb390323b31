"""The embedded node's switches that make it differ from a fresh validator, or let it pay
for what a real cluster's caller pays (docs/localnet.md, "Settings"), read from the
environment. Its address and data directory stay in settings.py, beside LEDGER_CLUSTERS."""

import environ

env = environ.Env()

__all__ = ["LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT", "LEDGER_LOCALNET_BLOCK_SUBSCRIPTION", "LEDGER_LOCALNET_AIRDROP_FUNDING"]

# Token-2022's native mint at genesis, as mainnet and devnet have it (off: a fresh validator).
LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT = env.bool("LEDGER_LOCALNET_TOKEN_2022_NATIVE_MINT", default=False)
# blockSubscribe, as Agave's --rpc-pubsub-enable-block-subscription (off, as there).
LEDGER_LOCALNET_BLOCK_SUBSCRIPTION = env.bool("LEDGER_LOCALNET_BLOCK_SUBSCRIPTION", default=False)
# Opt-in, CHAIN_LOCALNET only: a seed or dataLength rent with no funding account
# (svmTransactionConfig.feePayer) is paid from a throwaway key funded by airdrop. Never the
# platform fee payer, which pays network fees only (docs/accounts.md, "Who pays").
LEDGER_LOCALNET_AIRDROP_FUNDING = env.bool("LEDGER_LOCALNET_AIRDROP_FUNDING", default=False)
