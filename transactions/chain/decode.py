"""Decode a stored transaction message: its accounts and its instructions (docs/transactions.md,
"Transaction details and history").

Pure: bytes in, plain data out, no cluster and no database. The message is parsed with
solders (``solders.message``: legacy or V0); each instruction is decoded for the programs
the service uses — System, SPL Token, Token-2022 (its base instructions, the extension
instructions with a fixed layout and the token-metadata interface), Associated Token
Account, Address Lookup Table, Compute Budget and Memo — following the programs' own
layouts and, for names, the conventions of Solana's ``jsonParsed`` encoding (instruction
types such as ``transferChecked``; account roles such as ``source``, ``mint``). Anything
else (another program, a layout this module does not know, data too short for its
layout) keeps its raw base64 data and no decoded fields.

Quantities: lamports and other counters are integers; token amounts (u64 base units) are
strings, as in ``jsonParsed`` (past 2^53 a JSON reader may round a number); addresses are
base58. Trailing bytes after a known layout are ignored, as the programs themselves do
(e.g. SPL Token reads an absent freeze authority from its option tag alone).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from typing import Callable, Sequence

from solders.message import Message, MessageV0, from_bytes_versioned
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


class _Short(ValueError):
    """The data ends before its layout does, or holds a value the layout does not allow."""


_STRUCTS: dict[str, struct.Struct] = {}


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Short(f"needs {n} bytes at {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str):
        layout = _STRUCTS.get(fmt) or _STRUCTS.setdefault(fmt, struct.Struct("<" + fmt))
        return layout.unpack(self.take(layout.size))[0]

    def rest(self) -> bytes:
        return self.take(len(self.data) - self.pos)


def _pubkey(r: _Reader) -> str:
    return str(Pubkey(r.take(32)))


def _coption_pubkey(r: _Reader) -> str | None:
    # COption<Pubkey> in SPL Token instruction data: a one-byte tag, then the key if 1.
    tag = r.unpack("B")
    if tag == 0:
        return None
    if tag == 1:
        return _pubkey(r)
    raise _Short(f"option tag {tag}")


def _nonzero_pubkey(r: _Reader) -> str | None:
    # OptionalNonZeroPubkey (Token-2022 extensions): 32 bytes, all zeroes for "none".
    raw = r.take(32)
    return None if raw == bytes(32) else str(Pubkey(raw))


def _string(length_format: str) -> Callable[[_Reader], str]:
    def read(r: _Reader) -> str:
        try:
            return r.take(r.unpack(length_format)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Short("not UTF-8") from exc

    return read


def _u16_list(r: _Reader) -> list[int]:
    raw = r.rest()
    return [v for (v,) in struct.iter_unpack("<H", raw[: len(raw) // 2 * 2])]


def _enum(names: Sequence[str], fmt: str = "B") -> Callable[[_Reader], str]:
    def read(r: _Reader) -> str:
        value = r.unpack(fmt)
        if value >= len(names):
            raise _Short(f"no variant {value}")
        return names[value]

    return read


def _option_u64(r: _Reader) -> int | None:
    return r.unpack("Q") if r.unpack("B") else None


_READERS: dict[str, Callable[[_Reader], object]] = {
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
        raise _Short("not UTF-8") from exc


@dataclass(frozen=True)
class Layout:
    """One instruction: its jsonParsed type name, its accounts' roles in order, its data
    fields (name, reader) after the tag, and the role of accounts past the named ones."""

    name: str
    roles: tuple[str, ...] = ()
    fields: tuple[tuple[str, object], ...] = ()
    extra_role: str | None = None

    def read(self, r: _Reader) -> dict:
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


def _metadata_field(r: _Reader) -> str:
    tag = r.unpack("B")
    if tag < 3:
        return _METADATA_FIELD_NAMES[tag]
    if tag == 3:
        return _READERS["borsh_string"](r)
    raise _Short(f"no field variant {tag}")


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


# --- decoding ----------------------------------------------------------------------------------


def _tagged(table: dict, fmt: str) -> Callable[[bytes], tuple[Layout, _Reader]]:
    def find(data: bytes):
        r = _Reader(data)
        layout = table.get(r.unpack(fmt))
        if layout is None:
            raise _Short("unknown instruction")
        return layout, r

    return find


def _token(extensions: bool) -> Callable[[bytes], tuple[Layout, _Reader]]:
    def find(data: bytes):
        if extensions and data[:8] in TOKEN_METADATA:
            r = _Reader(data)
            r.take(8)
            return TOKEN_METADATA[data[:8]], r
        r = _Reader(data)
        tag = r.unpack("B")
        layout = TOKEN.get(tag) or (TOKEN_2022_EXTENSIONS.get(tag) if extensions else None)
        if isinstance(layout, dict):
            layout = layout.get(r.unpack("B"))
        if layout is None:
            raise _Short("unknown instruction")
        return layout, r

    return find


def _associated(data: bytes):
    # An empty data is Create (the program's first version took no data).
    layout = ASSOCIATED_TOKEN.get(data[0] if data else 0)
    if layout is None:
        raise _Short("unknown instruction")
    r = _Reader(data)
    r.take(min(1, len(data)))
    return layout, r


_MEMO = Layout("memo", (), (("memo", "utf8_rest"),), "signer")


def _memo(data: bytes):
    return _MEMO, _Reader(data)


_FINDERS: dict[str, Callable[[bytes], tuple[Layout, _Reader]]] = {
    SYSTEM_PROGRAM: _tagged(SYSTEM, "I"),
    TOKEN_PROGRAM: _token(extensions=False),
    TOKEN_2022_PROGRAM: _token(extensions=True),
    ASSOCIATED_TOKEN_PROGRAM: _associated,
    ADDRESS_LOOKUP_TABLE_PROGRAM: _tagged(ADDRESS_LOOKUP_TABLE, "I"),
    COMPUTE_BUDGET_PROGRAM: _tagged(COMPUTE_BUDGET, "B"),
    MEMO_PROGRAM: _memo,
    MEMO_V1_PROGRAM: _memo,
}


@dataclass(frozen=True)
class AccountKey:
    """One account of a message, in the message's order: static keys, then those loaded
    from lookup tables (writable, then read-only). ``address`` is None for a loaded one
    while the chain's record of the transaction (its loaded addresses) is not known;
    ``lookup_table`` / ``lookup_index`` say where it is loaded from."""

    address: str | None
    signer: bool
    writable: bool
    lookup_table: str | None = None
    lookup_index: int | None = None

    def as_dict(self) -> dict:
        return {"onchainId": self.address, "signer": self.signer, "writable": self.writable, "lookupTable": self.lookup_table, "lookupTableIndex": self.lookup_index}


def message_of(raw: bytes) -> Message | MessageV0:
    return from_bytes_versioned(bytes(raw))


def account_keys(message: Message | MessageV0, loaded: dict | None = None) -> list[AccountKey]:
    """Every account the message names, with its signer and writable flags as the message
    declares them (a key invoked as a program is never writable, as the runtime demotes
    it). ``loaded``: ``{"writable": [...], "readonly": [...]}`` from the transaction's
    record (getTransaction ``meta.loadedAddresses``), when known."""
    header = message.header
    static = [str(k) for k in message.account_keys]
    signed, n = header.num_required_signatures, len(static)
    called = {ix.program_id_index for ix in message.instructions}
    keys = []
    for i, address in enumerate(static):
        if i < signed:
            writable = i < signed - header.num_readonly_signed_accounts
        else:
            writable = i < n - header.num_readonly_unsigned_accounts
        keys.append(AccountKey(address, i < signed, writable and i not in called))
    lookups = list(getattr(message, "address_table_lookups", None) or ())
    if lookups:
        loaded = loaded or {}
        for writable, attr, known in ((True, "writable_indexes", loaded.get("writable") or []), (False, "readonly_indexes", loaded.get("readonly") or [])):
            position = 0
            for lookup in lookups:
                for index in getattr(lookup, attr):
                    address = known[position] if position < len(known) else None
                    keys.append(AccountKey(address, False, writable and (len(keys) not in called), str(lookup.account_key), int(index)))
                    position += 1
    return keys


def decode_instruction(program_id: str, data: bytes, accounts: Sequence[AccountKey | dict], index: int = 0) -> dict:
    """One instruction: its program, type, accounts with their roles, decoded data (None
    when this module does not know the program or layout) and its raw data (base64)."""
    layout, decoded = None, None
    finder = _FINDERS.get(program_id)
    if finder is not None:
        try:
            layout, reader = finder(data)
            decoded = layout.read(reader)
        except (_Short, struct.error, ValueError, IndexError):
            layout, decoded = None, None
    roles = layout.roles if layout is not None else ()
    extra = layout.extra_role if layout is not None else None
    return {
        "index": index,
        "programId": program_id,
        "programName": PROGRAM_NAMES.get(program_id),
        "instructionType": layout.name if layout is not None else None,
        "accounts": [{**(key if isinstance(key, dict) else key.as_dict()), "role": roles[i] if i < len(roles) else extra} for i, key in enumerate(accounts)],
        "data": decoded,
        "rawData": base64.b64encode(data).decode(),
    }


def decode_message(raw: bytes, loaded: dict | None = None) -> dict:
    """The accounts, instructions and lookup-table references of a serialized message
    (legacy or V0): ``{"accounts": [...], "instructions": [...], "addressTableLookups": [...]}``."""
    message = message_of(raw)
    keys = [key.as_dict() for key in account_keys(message, loaded)]
    unknown = AccountKey(None, False, False).as_dict()
    instructions = []
    for i, ix in enumerate(message.instructions):
        program = keys[ix.program_id_index]["onchainId"] if ix.program_id_index < len(keys) else None
        accounts = [keys[a] if a < len(keys) else unknown for a in bytes(ix.accounts)]
        instructions.append(decode_instruction(program or "", bytes(ix.data), accounts, i))
    lookups = [
        {"onchainId": str(lookup.account_key), "writableIndexes": list(bytes(lookup.writable_indexes)), "readonlyIndexes": list(bytes(lookup.readonly_indexes))}
        for lookup in (getattr(message, "address_table_lookups", None) or ())
    ]
    return {"accounts": keys, "instructions": instructions, "addressTableLookups": lookups}
