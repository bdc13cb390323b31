"""What a caller hands the engine to build a transaction: its signers (``SignerSpec``) and
its svmTransactionConfig (``TxConfig``). Plain values: every engine module and every area
names them without depending on the engine's services."""

from __future__ import annotations

from dataclasses import dataclass

from solders.pubkey import Pubkey

from chain import builder

from .models import Commitment, MessageLifetime


@dataclass(frozen=True)
class SignerSpec:
    """A required signer: its address and, when the service holds its key, the key.

    ``keypair``: a throwaway in-memory key (the localnet airdrop funder, docs/accounts.md);
    never stored."""

    pubkey: Pubkey
    managed_key: object | None = None  # accounts.ManagedKey
    keypair: object | None = None  # solders Keypair
    #: the request field that named it (errors of the signing check name it)
    field: str | None = None
    #: a key the platform holds for itself (its fee payer, its pool's nonce authority):
    #: it signs only in the roles the engine gives it (transactions/platform_keys.py)
    platform: bool = False
    #: a key another organization shares with the acting one: the owner's
    #: (networkCurrencyDebitApiKeys, tokenDebitApiKeys), checked where the engine signs
    shared_debit_api_keys: tuple | None = None
    #: the organization's account record it stands for (accounts.Account), when it is one:
    #: as the fee payer, paying the fee is a debit of it (transactions/fees.py)
    account: object | None = None

    @property
    def signs_here(self) -> bool:
        return self.managed_key is not None or self.keypair is not None


@dataclass(frozen=True)
class TxConfig:
    """svmTransactionConfig, parsed (ledger_project.api.envelope)."""

    fee_payer: SignerSpec | None = None
    compute: builder.ComputeUnits | None = None
    commitment: str = Commitment.CONFIRMED
    lifetime: str = MessageLifetime.RECENT_BLOCKHASH
    version: str = "V0"
    lookup_tables: tuple[Pubkey, ...] = ()
    #: DURABLE_NONCE with a tenant's own nonce account named (svmTransactionConfig.
    #: durableNonceAccount, resolved by the area): its NonceAccount pk
    nonce_account: int | None = None
    #: svmTransactionConfig.resignOnExpiry: sign the same intent again with a fresh blockhash
    #: when the last one expired unlanded (transactions/resign.py)
    resign_on_expiry: bool = True

    @classmethod
    def from_validated(cls, data: dict | None, *, fee_payer: SignerSpec | None = None) -> "TxConfig":
        data = data or {}
        cu = data.get("computeUnitConfig") or None
        compute = None
        if cu and cu.get("enable", True):
            compute = builder.ComputeUnits(limit=cu.get("limit"), price=cu.get("price"), estimate=bool(cu.get("priceEstimate")) and cu.get("price") is None)
        return cls(
            fee_payer=fee_payer,
            compute=compute,
            commitment=((data.get("commitmentConfig") or {}).get("commitmentLevel")) or Commitment.CONFIRMED,
            lifetime=data.get("messageLifetimeStrategy") or MessageLifetime.RECENT_BLOCKHASH,
            version=data.get("transactionVersion") or "V0",
            lookup_tables=tuple(Pubkey.from_string(a) for a in data.get("addressLookupTables") or ()),
            resign_on_expiry=data.get("resignOnExpiry") is not False,
        )
