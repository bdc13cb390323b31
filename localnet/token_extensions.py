"""Token-2022 extension instructions and the token-group / token-metadata interface
instructions in the reference's jsonParsed shapes (solana-transaction-status
parse_token/extension/*.rs), and the decoding functions token_instructions.py shares.

An extension instruction is the token tag, a sub-instruction byte, then its data: a
bytemuck struct of exactly its size (decode_instruction_data), or for the transfer fee
extension fields as TokenInstruction::unpack reads them. The interface instructions
start with an 8-byte discriminator (the first bytes of a sha256 of their names) and are
borsh, read to the last byte (try_from_slice).
"""

from __future__ import annotations

import base64
import hashlib
import struct

from solders.pubkey import Pubkey

from .instruction_parts import NotParsable, need, typed
from .parsing import _float_string
from .tokens import ui_amount

STATES = {0: "uninitialized", 1: "initialized", 2: "frozen"}


def discriminator(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()[:8]


def pk(raw: bytes) -> str:
    if len(raw) != 32:
        raise NotParsable
    return str(Pubkey(bytes(raw)))


def nonzero(raw: bytes) -> str | None:
    """OptionalNonZeroPubkey: all zeros is None."""
    return None if raw == bytes(32) else pk(raw)


def coption(data: bytes, offset: int) -> tuple[str | None, int]:
    """unpack_pubkey_option: tag 0 → None; tag 1 and 32 bytes → Some; else an error."""
    tag = data[offset]
    if tag == 0:
        return None, offset + 1
    if tag == 1 and len(data) >= offset + 33:
        return pk(data[offset + 1:offset + 33]), offset + 33
    raise NotParsable


def u64(data: bytes, offset: int) -> int:
    return struct.unpack_from("<Q", data, offset)[0]


def signers(info: dict, last_nonsigner: int, accounts: list[str], owner_name: str, multisig_name: str) -> None:
    """parse_signers: one authority, or a multisig and the signers after it."""
    owner = accounts[last_nonsigner] if len(accounts) > last_nonsigner else None
    if len(accounts) > last_nonsigner + 1:
        if owner is not None:
            info[multisig_name] = owner
        info["signers"] = accounts[last_nonsigner + 1:]
    elif owner is not None:
        info[owner_name] = owner


def with_signers(kind: str, info: dict, last_nonsigner: int, accounts: list[str], owner_name: str, multisig_name: str) -> dict:
    signers(info, last_nonsigner, accounts, owner_name, multisig_name)
    return typed(kind, info)


# --- extensions with sub-instructions -------------------------------------------------------
def _pod(data: bytes, size: int) -> bytes:
    """decode_instruction_data: the bytes after the two tags, exactly the struct's size."""
    body = data[2:]
    if len(body) != size:
        raise NotParsable
    return body


def transfer_fee(accounts, data):
    sub = data[1]
    if sub == 0:
        config_authority, offset = coption(data, 2)
        withdraw_authority, offset = coption(data, offset)
        basis_points, maximum = struct.unpack_from("<HQ", data, offset)
        need(accounts, 1)
        info = {"mint": accounts[0], "transferFeeBasisPoints": basis_points, "maximumFee": maximum}
        if config_authority is not None:
            info["transferFeeConfigAuthority"] = config_authority
        if withdraw_authority is not None:
            info["withdrawWithheldAuthority"] = withdraw_authority
        return typed("initializeTransferFeeConfig", info)
    if sub == 1:
        amount, decimals, fee = struct.unpack_from("<QBQ", data, 2)
        need(accounts, 4)
        info = {"source": accounts[0], "mint": accounts[1], "destination": accounts[2], "tokenAmount": ui_amount(amount, decimals), "feeAmount": ui_amount(fee, decimals)}
        return with_signers("transferCheckedWithFee", info, 3, accounts, "authority", "multisigAuthority")
    if sub == 2:
        need(accounts, 3)
        return with_signers("withdrawWithheldTokensFromMint", {"mint": accounts[0], "feeRecipient": accounts[1]}, 2, accounts,
                             "withdrawWithheldAuthority", "multisigWithdrawWithheldAuthority")
    if sub == 3:
        count = data[2]
        need(accounts, 3 + count)
        first_source = len(accounts) - count
        info = {"mint": accounts[0], "feeRecipient": accounts[1], "sourceAccounts": accounts[first_source:]}
        return with_signers("withdrawWithheldTokensFromAccounts", info, 2, accounts[:first_source], "withdrawWithheldAuthority", "multisigWithdrawWithheldAuthority")
    if sub == 4:
        need(accounts, 1)
        return typed("harvestWithheldTokensToMint", {"mint": accounts[0], "sourceAccounts": accounts[1:]})
    if sub == 5:
        basis_points, maximum = struct.unpack_from("<HQ", data, 2)
        need(accounts, 2)
        # "multisigtransferFeeConfigAuthority" (lower-case t) is the reference's spelling.
        return with_signers("setTransferFee", {"mint": accounts[0], "transferFeeBasisPoints": basis_points, "maximumFee": maximum}, 1, accounts,
                             "transferFeeConfigAuthority", "multisigtransferFeeConfigAuthority")
    raise NotParsable


def default_account_state(accounts, data):
    if len(data) != 3 or data[2] not in STATES or data[1] > 1:
        raise NotParsable
    state = STATES[data[2]]
    if data[1] == 0:
        need(accounts, 1)
        return typed("initializeDefaultAccountState", {"mint": accounts[0], "accountState": state})
    need(accounts, 2)
    return with_signers("updateDefaultAccountState", {"mint": accounts[0], "accountState": state}, 1, accounts, "freezeAuthority", "multisigFreezeAuthority")


def toggle(suffix: str):
    """Memo transfer and CPI guard: 0 enable, 1 disable, on an account by its owner."""
    def parse(accounts, data):
        need(accounts, 2)
        if len(data) < 2 or data[1] > 1:
            raise NotParsable
        verb = "enable" if data[1] == 0 else "disable"
        return with_signers(f"{verb}{suffix}", {"account": accounts[0]}, 1, accounts, "owner", "multisigOwner")
    return parse


def interest_bearing(accounts, data):
    if data[1] == 0:
        body = _pod(data, 34)
        need(accounts, 1)
        return typed("initializeInterestBearingConfig", {"mint": accounts[0], "rateAuthority": nonzero(body[:32]), "rate": struct.unpack_from("<h", body, 32)[0]})
    if data[1] == 1:
        body = _pod(data, 2)
        need(accounts, 2)
        return with_signers("updateInterestBearingConfigRate", {"mint": accounts[0], "newRate": struct.unpack("<h", body)[0]}, 1, accounts,
                             "rateAuthority", "multisigRateAuthority")
    raise NotParsable


def pointer(name: str, address_key: str, field: str = "authority"):
    """Transfer hook and the metadata/group/member pointers: Initialize {authority,
    address} and Update {address}; absent (zero) keys are left out."""
    def parse(accounts, data):
        if data[1] == 0:
            body = _pod(data, 64)
            need(accounts, 1)
            info = {"mint": accounts[0]}
            authority, address = nonzero(body[:32]), nonzero(body[32:])
            if authority is not None:
                info[field] = authority
            if address is not None:
                info[address_key] = address
            return typed(f"initialize{name}", info)
        if data[1] == 1:
            body = _pod(data, 32)
            need(accounts, 2)
            info = {"mint": accounts[0]}
            address = nonzero(body)
            if address is not None:
                info[address_key] = address
            return with_signers(f"update{name}", info, 1, accounts, "authority", "multisigAuthority")
        raise NotParsable
    return parse


def scaled_ui_amount(accounts, data):
    if data[1] == 0:
        body = _pod(data, 40)
        need(accounts, 1)
        return typed("initializeScaledUiAmountConfig", {"mint": accounts[0], "authority": nonzero(body[:32]),
                                                        "multiplier": _float_string(struct.unpack_from("<d", body, 32)[0])})
    if data[1] == 1:
        body = _pod(data, 16)
        multiplier, timestamp = struct.unpack("<dq", body)
        need(accounts, 2)
        return with_signers("updateMultiplier", {"mint": accounts[0], "newMultiplier": _float_string(multiplier), "newMultiplierTimestamp": timestamp}, 1, accounts,
                             "authority", "multisigAuthority")
    raise NotParsable


def pausable(accounts, data):
    if data[1] == 0:
        body = _pod(data, 32)
        need(accounts, 1)
        return typed("initializePausableConfig", {"mint": accounts[0], "authority": nonzero(body)})
    if data[1] in (1, 2):
        need(accounts, 2)
        return with_signers("pause" if data[1] == 1 else "resume", {"mint": accounts[0]}, 1, accounts, "authority", "multisigAuthority")
    raise NotParsable


def _elgamal(raw: bytes) -> str | None:
    """A (Pod)ElGamal public key or AE ciphertext as its Display writes it: base64; an
    all-zero optional key is None."""
    return None if raw == bytes(len(raw)) else base64.b64encode(raw).decode()


def confidential_transfer(accounts, data):
    """InitializeMint only (what this service sends): the other confidential-transfer
    instructions carry proofs and stay partially decoded here."""
    if data[1] != 0:
        raise NotParsable
    body = _pod(data, 65)
    need(accounts, 1)
    info = {"mint": accounts[0], "autoApproveNewAccounts": bool(body[32]), "auditorElGamalPubkey": _elgamal(body[33:65])}
    authority = nonzero(body[:32])
    if authority is not None:
        info["authority"] = authority
    return typed("initializeConfidentialTransferMint", info)


def confidential_mint_burn(accounts, data):
    """InitializeMint only, as for confidential transfers."""
    if data[1] != 0:
        raise NotParsable
    body = _pod(data, 68)
    need(accounts, 1)
    return typed("initializeConfidentialMintBurnMint", {"mint": accounts[0], "supplyElGamalPubkey": base64.b64encode(body[:32]).decode(),
                                                         "decryptableSupply": base64.b64encode(body[32:]).decode()})


def needs_sub(parse):
    """Extensions whose parser the reference calls only with a sub-instruction byte."""
    def guarded(accounts, data):
        if len(data) < 2:
            raise NotParsable
        return parse(accounts, data)
    return guarded


# --- the token-group and token-metadata interfaces ----------------------------------------------
_GROUP = {discriminator(f"spl_token_group_interface:{name}"): name for name in ("initialize_token_group", "update_group_max_size", "update_authority", "initialize_member")}
_METADATA = {discriminator(f"spl_token_metadata_interface:{name}"): name for name in ("initialize_account", "updating_field", "remove_key_ix", "update_the_authority", "emitter")}


def group(accounts: list[str], data: bytes) -> dict | None:
    name = _GROUP.get(data[:8])
    if name is None:
        return None
    body = data[8:]
    if name == "initialize_token_group":
        if len(body) != 40:
            raise NotParsable
        need(accounts, 3)
        return typed("initializeTokenGroup", {"group": accounts[0], "maxSize": u64(body, 32), "mint": accounts[1], "mintAuthority": accounts[2], "updateAuthority": nonzero(body[:32])})
    if name == "update_group_max_size":
        if len(body) != 8:
            raise NotParsable
        need(accounts, 2)
        return typed("updateTokenGroupMaxSize", {"group": accounts[0], "maxSize": u64(body, 0), "updateAuthority": accounts[1]})
    if name == "update_authority":
        if len(body) != 32:
            raise NotParsable
        need(accounts, 2)
        return typed("updateTokenGroupAuthority", {"group": accounts[0], "updateAuthority": accounts[1], "newAuthority": nonzero(body)})
    if body:
        raise NotParsable
    need(accounts, 5)
    return typed("initializeTokenGroupMember", {"member": accounts[0], "memberMint": accounts[1], "memberMintAuthority": accounts[2], "group": accounts[3],
                                                "groupUpdateAuthority": accounts[4]})


class _Borsh:
    """Just enough borsh for the metadata interface; ``done()`` asserts every byte was read
    (try_from_slice)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise NotParsable
        self.at += n
        return self.data[self.at - n:self.at]

    def u8(self) -> int:
        return self.take(1)[0]

    def string(self) -> str:
        (length,) = struct.unpack("<I", self.take(4))
        return self.take(length).decode("utf-8")

    def option_u64(self) -> int | None:
        tag = self.u8()
        if tag > 1:
            raise NotParsable
        return struct.unpack("<Q", self.take(8))[0] if tag else None

    def done(self) -> None:
        if self.at != len(self.data):
            raise NotParsable


_FIELDS = ("name", "symbol", "uri")


def metadata(accounts: list[str], data: bytes) -> dict | None:
    name = _METADATA.get(data[:8])
    if name is None:
        return None
    r = _Borsh(data[8:])
    if name == "initialize_account":
        info = {"name": r.string(), "symbol": r.string(), "uri": r.string()}
        r.done()
        need(accounts, 4)
        return typed("initializeTokenMetadata", {"metadata": accounts[0], "updateAuthority": accounts[1], "mint": accounts[2], "mintAuthority": accounts[3], **info})
    if name == "updating_field":
        variant = r.u8()
        if variant > 3:
            raise NotParsable
        field = _FIELDS[variant] if variant < 3 else r.string()
        value = r.string()
        r.done()
        need(accounts, 2)
        return typed("updateTokenMetadataField", {"metadata": accounts[0], "updateAuthority": accounts[1], "field": field, "value": value})
    if name == "remove_key_ix":
        idempotent = r.u8()
        if idempotent > 1:
            raise NotParsable
        key = r.string()
        r.done()
        need(accounts, 2)
        return typed("removeTokenMetadataKey", {"metadata": accounts[0], "updateAuthority": accounts[1], "key": key, "idempotent": bool(idempotent)})
    if name == "update_the_authority":
        new_authority = nonzero(r.take(32))
        r.done()
        need(accounts, 2)
        return typed("updateTokenMetadataAuthority", {"metadata": accounts[0], "updateAuthority": accounts[1], "newAuthority": new_authority})
    start, end = r.option_u64(), r.option_u64()
    r.done()
    need(accounts, 1)
    info = {"metadata": accounts[0]}
    if start is not None:
        info["start"] = start
    if end is not None:
        info["end"] = end
    return typed("emitTokenMetadata", info)
