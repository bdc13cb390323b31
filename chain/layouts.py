"""The instruction layouts chain/decode.py reads: each program's instructions by tag, their
accounts' roles and data fields, named after Solana's ``jsonParsed`` encoding (instruction
types such as ``transferChecked``; account roles such as ``source``, ``mint``); and the
readers of their field types. Pure data and readers: no cluster, no database.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from typing import Callable, Sequence

from solders.pubkey import Pubkey

SYSTEM_PROGRAM = "11111111111111111111111111111111"
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
ADDRESS_LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111"
COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111"
MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
MEMO_V1_PROGRAM = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"

#: programId → the name ``programName`` carries (Solana's jsonParsed program names).
PROGRAM_NAMES = {
    SYSTEM_PROGRAM: "system",
    TOKEN_PROGRAM: "spl-token",
    TOKEN_2022_PROGRAM: "spl-token-2022",
    ASSOCIATED_TOKEN_PROGRAM: "spl-associated-token-account",
    ADDRESS_LOOKUP_TABLE_PROGRAM: "address-lookup-table",
    COMPUTE_BUDGET_PROGRAM: "compute-budget",
    MEMO_PROGRAM: "spl-memo",
    MEMO_V1_PROGRAM: "spl-memo",
}


class NotDecodable(ValueError):
    """The data ends before its layout does, or holds a value the layout does not allow."""


_STRUCTS: dict[str, struct.Struct] = {}


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise NotDecodable(f"needs {n} bytes at {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str):
        layout = _STRUCTS.get(fmt) or _STRUCTS.setdefault(fmt, struct.Struct("<" + fmt))
        return layout.unpack(self.take(layout.size))[0]

    def rest(self) -> bytes:
        return self.take(len(self.data) - self.pos)


def _pubkey(r: Reader) -> str:
    return str(Pubkey(r.take(32)))


def _coption_pubkey(r: Reader) -> str | None:
    # COption<Pubkey> in SPL Token instruction data: a one-byte tag, then the key if 1.
    tag = r.unpack("B")
    if tag == 0:
        return None
    if tag == 1:
        return _pubkey(r)
    raise NotDecodable(f"option tag {tag}")


def _nonzero_pubkey(r: Reader) -> str | None:
    # OptionalNonZeroPubkey (Token-2022 extensions): 32 bytes, all zeroes for "none".
    raw = r.take(32)
    return None if raw == bytes(32) else str(Pubkey(raw))


def _string(length_format: str) -> Callable[[Reader], str]:
    def read(r: Reader) -> str:
        try:
            return r.take(r.unpack(length_format)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotDecodable("not UTF-8") from exc

    return read


def _u16_list(r: Reader) -> list[int]:
    raw = r.rest()
    return [v for (v,) in struct.iter_unpack("<H", raw[: len(raw) // 2 * 2])]


def _enum(names: Sequence[str], fmt: str = "B") -> Callable[[Reader], str]:
    def read(r: Reader) -> str:
        value = r.unpack(fmt)
        if value >= len(names):
            raise NotDecodable(f"no variant {value}")
        return names[value]

    return read


def _option_u64(r: Reader) -> int | None:
    return r.unpack("Q") if r.unpack("B") else None


_READERS: dict[str, Callable[[Reader], object]] = {
    "u8": lambda r: r.unpack("B"),
    "u16": lambda r: r.unpack("H"),
    "u32": lambda r: r.unpack("I"),
    "u64": lambda r: r.unpack("Q"),
    "i16": lambda r: r.unpack("h"),
    "i64": lambda r: r.unpack("q"),
    "f64": lambda r: r.unpack("d"),
    "bool": lambda r: r.unpack("B") != 0,
    "amount": lambda r: str(r.unpack("Q")),  # token base units: a string
    "pubkey": _pubkey,
    "coption_pubkey": _coption_pubkey,
    "nonzero_pubkey": _nonzero_pubkey,
    "bincode_string": _string("Q"),  # System program seeds (bincode: u64 length)
    "borsh_string": _string("I"),  # token-metadata interface (borsh: u32 length)
    "u16_list": _u16_list,
    "utf8_rest": lambda r: _utf8(r.rest()),
    "b64_32": lambda r: base64.b64encode(r.take(32)).decode(),
    "b64_36": lambda r: base64.b64encode(r.take(36)).decode(),
    "option_u64": _option_u64,
    "pubkey_vec": lambda r: [_pubkey(r) for _ in range(r.unpack("Q"))],
}


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotDecodable("not UTF-8") from exc


@dataclass(frozen=True)
class Layout:
    """One instruction: its jsonParsed type name, its accounts' roles in order, its data
    fields (name, reader) after the tag, and the role of accounts past the named ones."""

    name: str
    roles: tuple[str, ...] = ()
    fields: tuple[tuple[str, object], ...] = ()
    extra_role: str | None = None

    def read(self, r: Reader) -> dict:
        out = {}
        for key, kind in self.fields:
            out[key] = (_READERS[kind] if isinstance(kind, str) else kind)(r)
        return out


def _L(name: str, roles: str = "", *fields: tuple[str, object], extra: str | None = None) -> Layout:
    return Layout(name, tuple(roles.split()), tuple(fields), extra)


# --- System program (u32 tag) ------------------------------------------------------------

SYSTEM = {
    0: _L("createAccount", "source newAccount", ("lamports", "u64"), ("space", "u64"), ("owner", "pubkey")),
    1: _L("assign", "account", ("owner", "pubkey")),
    2: _L("transfer", "source destination", ("lamports", "u64")),
    3: _L("createAccountWithSeed", "source newAccount base", ("base", "pubkey"), ("seed", "bincode_string"), ("lamports", "u64"), ("space", "u64"), ("owner", "pubkey")),
    4: _L("advanceNonce", "nonceAccount recentBlockhashesSysvar nonceAuthority"),
    5: _L("withdrawFromNonce", "nonceAccount destination recentBlockhashesSysvar rentSysvar nonceAuthority", ("lamports", "u64")),
    6: _L("initializeNonce", "nonceAccount recentBlockhashesSysvar rentSysvar", ("nonceAuthority", "pubkey")),
    7: _L("authorizeNonce", "nonceAccount nonceAuthority", ("newAuthorized", "pubkey")),
    8: _L("allocate", "account", ("space", "u64")),
    9: _L("allocateWithSeed", "account base", ("base", "pubkey"), ("seed", "bincode_string"), ("space", "u64"), ("owner", "pubkey")),
    10: _L("assignWithSeed", "account base", ("base", "pubkey"), ("seed", "bincode_string"), ("owner", "pubkey")),
    11: _L("transferWithSeed", "source sourceBase destination", ("lamports", "u64"), ("sourceSeed", "bincode_string"), ("sourceOwner", "pubkey")),
    12: _L("upgradeNonce", "nonceAccount"),
}

# --- SPL Token and Token-2022 (u8 tag; extensions add a u8 sub-instruction) ----------------

AUTHORITY_TYPES = (
    "mintTokens", "freezeAccount", "accountOwner", "closeAccount", "transferFeeConfig", "withheldWithdraw", "closeMint",
    "interestRate", "permanentDelegate", "confidentialTransferMint", "transferHookProgramId", "confidentialTransferFeeConfig",
    "metadataPointer", "groupPointer", "groupMemberPointer", "scaledUiAmount", "pause",
)
ACCOUNT_STATES = ("uninitialized", "initialized", "frozen")
_M = "multisigSigner"
_MINT_FIELDS = (("decimals", "u8"), ("mintAuthority", "pubkey"), ("freezeAuthority", "coption_pubkey"))

TOKEN = {
    0: _L("initializeMint", "mint rentSysvar", *_MINT_FIELDS),
    1: _L("initializeAccount", "account mint owner rentSysvar"),
    2: _L("initializeMultisig", "multisig rentSysvar", ("m", "u8"), extra="signer"),
    3: _L("transfer", "source destination authority", ("amount", "amount"), extra=_M),
    4: _L("approve", "source delegate owner", ("amount", "amount"), extra=_M),
    5: _L("revoke", "source owner", extra=_M),
    6: _L("setAuthority", "account authority", ("authorityType", _enum(AUTHORITY_TYPES)), ("newAuthority", "coption_pubkey"), extra=_M),
    7: _L("mintTo", "mint account mintAuthority", ("amount", "amount"), extra=_M),
    8: _L("burn", "account mint authority", ("amount", "amount"), extra=_M),
    9: _L("closeAccount", "account destination owner", extra=_M),
    10: _L("freezeAccount", "account mint freezeAuthority", extra=_M),
    11: _L("thawAccount", "account mint freezeAuthority", extra=_M),
    12: _L("transferChecked", "source mint destination authority", ("amount", "amount"), ("decimals", "u8"), extra=_M),
    13: _L("approveChecked", "source mint delegate owner", ("amount", "amount"), ("decimals", "u8"), extra=_M),
    14: _L("mintToChecked", "mint account mintAuthority", ("amount", "amount"), ("decimals", "u8"), extra=_M),
    15: _L("burnChecked", "account mint authority", ("amount", "amount"), ("decimals", "u8"), extra=_M),
    16: _L("initializeAccount2", "account mint rentSysvar", ("owner", "pubkey")),
    17: _L("syncNative", "account"),
    18: _L("initializeAccount3", "account mint", ("owner", "pubkey")),
    19: _L("initializeMultisig2", "multisig", ("m", "u8"), extra="signer"),
    20: _L("initializeMint2", "mint", *_MINT_FIELDS),
    21: _L("getAccountDataSize", "mint", ("extensionTypes", "u16_list")),
    22: _L("initializeImmutableOwner", "account"),
    23: _L("amountToUiAmount", "mint", ("amount", "amount")),
    24: _L("uiAmountToAmount", "mint", ("uiAmount", "utf8_rest")),
}

_ENABLE_DISABLE = lambda what: {0: _L(f"enable{what}", "account owner", extra=_M), 1: _L(f"disable{what}", "account owner", extra=_M)}  # noqa: E731


def _pointer(kind: str, address: str) -> dict:
    return {
        0: _L(f"initialize{kind}", "mint", ("authority", "nonzero_pubkey"), (address, "nonzero_pubkey")),
        1: _L(f"update{kind}", "mint authority", (address, "nonzero_pubkey"), extra=_M),
    }


def _names(*names: str, roles: str = "") -> dict:
    """Sub-instructions whose proofs or ciphertexts are not decoded: their names only."""
    return {i: _L(name, roles) for i, name in enumerate(names)}


#: Token-2022 only: a layout, or a dict of sub-instructions (u8 after the tag).
TOKEN_2022_EXTENSIONS: dict[int, Layout | dict[int, Layout]] = {
    25: _L("initializeMintCloseAuthority", "mint", ("newAuthority", "coption_pubkey")),
    26: {
        0: _L("initializeTransferFeeConfig", "mint", ("transferFeeConfigAuthority", "coption_pubkey"), ("withdrawWithheldAuthority", "coption_pubkey"),
              ("transferFeeBasisPoints", "u16"), ("maximumFee", "amount")),
        1: _L("transferCheckedWithFee", "source mint destination authority", ("amount", "amount"), ("decimals", "u8"), ("fee", "amount"), extra=_M),
        2: _L("withdrawWithheldTokensFromMint", "mint feeRecipient withdrawWithheldAuthority", extra=_M),
        3: _L("withdrawWithheldTokensFromAccounts", "mint feeRecipient withdrawWithheldAuthority", ("numTokenAccounts", "u8"), extra="sourceAccount"),
        4: _L("harvestWithheldTokensToMint", "mint", extra="sourceAccount"),
        5: _L("setTransferFee", "mint transferFeeConfigAuthority", ("transferFeeBasisPoints", "u16"), ("maximumFee", "amount"), extra=_M),
    },
    27: {
        **_names("initializeConfidentialTransferMint", "updateConfidentialTransferMint", "configureConfidentialTransferAccount",
                 "approveConfidentialTransferAccount", "emptyConfidentialTransferAccount", "depositConfidentialTransfer",
                 "withdrawConfidentialTransfer", "confidentialTransfer", "applyPendingConfidentialTransferBalance",
                 "enableConfidentialTransferConfidentialCredits", "disableConfidentialTransferConfidentialCredits",
                 "enableConfidentialTransferNonConfidentialCredits", "disableConfidentialTransferNonConfidentialCredits",
                 "confidentialTransferWithFee", "configureConfidentialAccountWithRegistry"),
        0: _L("initializeConfidentialTransferMint", "mint", ("authority", "nonzero_pubkey"), ("autoApproveNewAccounts", "bool"), ("auditorElGamalPubkey", "b64_32")),
    },
    28: {
        0: _L("initializeDefaultAccountState", "mint", ("accountState", _enum(ACCOUNT_STATES))),
        1: _L("updateDefaultAccountState", "mint freezeAuthority", ("accountState", _enum(ACCOUNT_STATES)), extra=_M),
    },
    29: _L("reallocate", "account payer systemProgram owner", ("extensionTypes", "u16_list"), extra=_M),
    30: _ENABLE_DISABLE("RequiredMemoTransfers"),
    31: _L("createNativeMint", "payer nativeMint systemProgram"),
    32: _L("initializeNonTransferableMint", "mint"),
    33: {
        0: _L("initializeInterestBearingConfig", "mint", ("rateAuthority", "nonzero_pubkey"), ("rate", "i16")),
        1: _L("updateInterestBearingConfigRate", "mint rateAuthority", ("newRate", "i16"), extra=_M),
    },
    34: _ENABLE_DISABLE("CpiGuard"),
    35: _L("initializePermanentDelegate", "mint", ("delegate", "pubkey")),
    36: {
        0: _L("initializeTransferHook", "mint", ("authority", "nonzero_pubkey"), ("programId", "nonzero_pubkey")),
        1: _L("updateTransferHook", "mint authority", ("programId", "nonzero_pubkey"), extra=_M),
    },
    37: _names("initializeConfidentialTransferFeeConfig", "withdrawWithheldConfidentialTransferTokensFromMint",
               "withdrawWithheldConfidentialTransferTokensFromAccounts", "harvestWithheldConfidentialTransferTokensToMint",
               "enableConfidentialTransferFeeHarvestToMint", "disableConfidentialTransferFeeHarvestToMint"),
    38: _L("withdrawExcessLamports", "source destination authority", extra=_M),
    39: _pointer("MetadataPointer", "metadataAddress"),
    40: _pointer("GroupPointer", "groupAddress"),
    41: _pointer("GroupMemberPointer", "memberAddress"),
    42: {
        **_names("initializeConfidentialMintBurnMint", "rotateConfidentialMintBurnSupplyElGamalPubkey", "updateConfidentialMintBurnDecryptableSupply",
                 "confidentialMint", "confidentialBurn", "applyPendingConfidentialBurn"),
        0: _L("initializeConfidentialMintBurnMint", "mint", ("supplyElGamalPubkey", "b64_32"), ("decryptableSupply", "b64_36")),
    },
    43: {
        0: _L("initializeScaledUiAmountConfig", "mint", ("authority", "nonzero_pubkey"), ("multiplier", "f64")),
        1: _L("updateScaledUiAmountMultiplier", "mint authority", ("newMultiplier", "f64"), ("effectiveTimestamp", "i64"), extra=_M),
    },
    44: {
        0: _L("initializePausableConfig", "mint", ("authority", "pubkey")),
        1: _L("pause", "mint authority", extra=_M),
        2: _L("resume", "mint authority", extra=_M),
    },
}


def _discriminator(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()[:8]


_METADATA_FIELD_NAMES = ("name", "symbol", "uri")


def _metadata_field(r: Reader) -> str:
    tag = r.unpack("B")
    if tag < 3:
        return _METADATA_FIELD_NAMES[tag]
    if tag == 3:
        return _READERS["borsh_string"](r)
    raise NotDecodable(f"no field variant {tag}")


#: The token-metadata interface (stored in a Token-2022 mint): 8-byte discriminators.
TOKEN_METADATA = {
    _discriminator("spl_token_metadata_interface:initialize_account"): _L(
        "initializeTokenMetadata", "metadata updateAuthority mint mintAuthority", ("name", "borsh_string"), ("symbol", "borsh_string"), ("uri", "borsh_string")),
    _discriminator("spl_token_metadata_interface:updating_field"): _L("updateTokenMetadataField", "metadata updateAuthority", ("field", _metadata_field), ("value", "borsh_string")),
    _discriminator("spl_token_metadata_interface:remove_key_ix"): _L("removeTokenMetadataKey", "metadata updateAuthority", ("idempotent", "bool"), ("key", "borsh_string")),
    _discriminator("spl_token_metadata_interface:update_the_authority"): _L("updateTokenMetadataUpdateAuthority", "metadata updateAuthority", ("newAuthority", "nonzero_pubkey")),
    _discriminator("spl_token_metadata_interface:emitter"): _L("emitTokenMetadata", "metadata", ("start", "option_u64"), ("end", "option_u64")),
}

# --- Associated Token Account, Address Lookup Table, Compute Budget --------------------------

_ATA_ROLES = "source account wallet mint systemProgram tokenProgram rentSysvar"  # the rent sysvar: older clients only
ASSOCIATED_TOKEN = {
    0: _L("create", _ATA_ROLES),
    1: _L("createIdempotent", _ATA_ROLES),
    2: _L("recoverNested", "nestedSource nestedMint destination nestedOwner ownerMint wallet tokenProgram"),
}

ADDRESS_LOOKUP_TABLE = {
    0: _L("createLookupTable", "lookupTableAccount lookupTableAuthority payerAccount systemProgram", ("recentSlot", "u64"), ("bumpSeed", "u8")),
    1: _L("freezeLookupTable", "lookupTableAccount lookupTableAuthority"),
    2: _L("extendLookupTable", "lookupTableAccount lookupTableAuthority payerAccount systemProgram", ("newAddresses", "pubkey_vec")),
    3: _L("deactivateLookupTable", "lookupTableAccount lookupTableAuthority"),
    4: _L("closeLookupTable", "lookupTableAccount lookupTableAuthority recipient"),
}

COMPUTE_BUDGET = {
    0: _L("requestUnits", "", ("units", "u32"), ("additionalFee", "u32")),
    1: _L("requestHeapFrame", "", ("bytes", "u32")),
    2: _L("setComputeUnitLimit", "", ("units", "u32")),
    3: _L("setComputeUnitPrice", "", ("microLamports", "u64")),
    4: _L("setLoadedAccountsDataSizeLimit", "", ("bytes", "u32")),
}
