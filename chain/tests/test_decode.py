"""The message decoder (chain/decode.py), program by program: instructions are
encoded with the programs' own client libraries (solders, solana-py's spl.token, the
service's Token-2022 encoders) and must come back with their fields and account roles."""

from __future__ import annotations

import base64
import struct

import pytest
import solders.solders as solders_native
from solders.compute_budget import request_heap_frame, set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0, to_bytes_versioned
from solders.pubkey import Pubkey
from solders import system_program as sp
from spl.token import instructions as spl
from spl.token.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID

from instruments.token2022 import instructions as t22
from instruments.token2022.constants import AccountState
from chain import decode

PAYER = Keypair().pubkey()


def key() -> Pubkey:
    return Keypair().pubkey()


def decoded(ix: Instruction) -> dict:
    """The one instruction of a legacy message paid by PAYER, decoded."""
    message = Message.new_with_blockhash([ix], PAYER, Hash.default())
    return decode.decode_message(bytes(message))["instructions"][0]


def roles(result: dict) -> dict:
    return {a["role"]: a["onchainId"] for a in result["accounts"]}


# --- System ---------------------------------------------------------------------------------


def test_system_transfer_and_create_account():
    source, destination, owner = key(), key(), key()
    out = decoded(sp.transfer(sp.TransferParams(from_pubkey=source, to_pubkey=destination, lamports=1_500_000_000)))
    assert (out["programName"], out["instructionType"], out["data"]) == ("system", "transfer", {"lamports": 1_500_000_000})
    assert roles(out) == {"source": str(source), "destination": str(destination)}
    assert [(a["signer"], a["writable"]) for a in out["accounts"]] == [(True, True), (False, True)]
    out = decoded(sp.create_account(sp.CreateAccountParams(from_pubkey=source, to_pubkey=destination, lamports=890_880, space=82, owner=owner)))
    assert out["instructionType"] == "createAccount" and out["data"] == {"lamports": 890_880, "space": 82, "owner": str(owner)}
    assert roles(out) == {"source": str(source), "newAccount": str(destination)}


def test_system_seeded_instructions_read_their_seed():
    base, new, owner, destination = key(), key(), key(), key()
    out = decoded(sp.create_account_with_seed(sp.CreateAccountWithSeedParams(from_pubkey=base, to_pubkey=new, base=base, seed="vault-1", lamports=5, space=0, owner=owner)))
    assert out["instructionType"] == "createAccountWithSeed"
    assert out["data"] == {"base": str(base), "seed": "vault-1", "lamports": 5, "space": 0, "owner": str(owner)}
    out = decoded(sp.transfer_with_seed(sp.TransferWithSeedParams(from_pubkey=new, from_base=base, from_seed="vault-1", from_owner=owner, to_pubkey=destination, lamports=7)))
    assert out["data"] == {"lamports": 7, "sourceSeed": "vault-1", "sourceOwner": str(owner)}
    assert roles(out) == {"source": str(new), "sourceBase": str(base), "destination": str(destination)}


def test_system_nonce_instructions():
    nonce, authority, new_authority, destination = key(), key(), key(), key()
    out = decoded(sp.advance_nonce_account(sp.AdvanceNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=authority)))
    assert out["instructionType"] == "advanceNonce" and out["data"] == {}
    assert roles(out)["nonceAccount"] == str(nonce) and roles(out)["nonceAuthority"] == str(authority)
    out = decoded(sp.withdraw_nonce_account(sp.WithdrawNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=authority, to_pubkey=destination, lamports=99)))
    assert out["instructionType"] == "withdrawFromNonce" and out["data"] == {"lamports": 99} and roles(out)["destination"] == str(destination)
    out = decoded(sp.initialize_nonce_account(sp.InitializeNonceAccountParams(nonce_pubkey=nonce, authority=authority)))
    assert out["instructionType"] == "initializeNonce" and out["data"] == {"nonceAuthority": str(authority)}
    out = decoded(sp.authorize_nonce_account(sp.AuthorizeNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=authority, new_authority=new_authority)))
    assert out["instructionType"] == "authorizeNonce" and out["data"] == {"newAuthorized": str(new_authority)}
    out = decoded(sp.allocate(sp.AllocateParams(pubkey=nonce, space=80)))
    assert out["instructionType"] == "allocate" and out["data"] == {"space": 80}
    out = decoded(sp.assign(sp.AssignParams(pubkey=nonce, owner=authority)))
    assert out["instructionType"] == "assign" and out["data"] == {"owner": str(authority)}


# --- SPL Token (and the same base instructions on Token-2022) -----------------------------------


@pytest.mark.parametrize("program, name", [(TOKEN_PROGRAM_ID, "spl-token"), (TOKEN_2022_PROGRAM_ID, "spl-token-2022")])
def test_token_transfer_checked_mint_and_burn(program, name):
    source, mint, destination, owner = key(), key(), key(), key()
    out = decoded(spl.transfer_checked(spl.TransferCheckedParams(program_id=program, source=source, mint=mint, dest=destination, owner=owner, amount=2**63 + 5, decimals=6)))
    assert (out["programName"], out["instructionType"]) == (name, "transferChecked")
    assert out["data"] == {"amount": str(2**63 + 5), "decimals": 6}  # token amounts are strings
    assert roles(out) == {"source": str(source), "mint": str(mint), "destination": str(destination), "authority": str(owner)}
    out = decoded(spl.mint_to_checked(spl.MintToCheckedParams(program_id=program, mint=mint, dest=destination, mint_authority=owner, amount=10, decimals=2)))
    assert out["instructionType"] == "mintToChecked" and out["data"] == {"amount": "10", "decimals": 2} and roles(out)["mintAuthority"] == str(owner)
    out = decoded(spl.burn_checked(spl.BurnCheckedParams(program_id=program, account=source, mint=mint, owner=owner, amount=3, decimals=2)))
    assert out["instructionType"] == "burnChecked" and roles(out) == {"account": str(source), "mint": str(mint), "authority": str(owner)}
    out = decoded(spl.transfer(spl.TransferParams(program_id=program, source=source, dest=destination, owner=owner, amount=4)))
    assert out["instructionType"] == "transfer" and out["data"] == {"amount": "4"}


def test_token_initialize_mint_reads_an_absent_freeze_authority_from_its_tag():
    mint, authority, freezer = key(), key(), key()
    # solana-py pads an absent freeze authority with 32 zero bytes; the program reads the tag only.
    out = decoded(spl.initialize_mint(spl.InitializeMintParams(decimals=9, mint=mint, mint_authority=authority, freeze_authority=None, program_id=TOKEN_PROGRAM_ID)))
    assert out["instructionType"] == "initializeMint" and out["data"] == {"decimals": 9, "mintAuthority": str(authority), "freezeAuthority": None}
    out = decoded(t22.initialize_mint2(mint=mint, decimals=2, mint_authority=authority, freeze_authority=freezer))
    assert out["instructionType"] == "initializeMint2" and out["data"] == {"decimals": 2, "mintAuthority": str(authority), "freezeAuthority": str(freezer)}
    out = decoded(t22.initialize_mint2(mint=mint, decimals=2, mint_authority=authority, freeze_authority=None))  # the real 1-byte None
    assert out["data"]["freezeAuthority"] is None


def test_token_set_authority_close_freeze_thaw_approve_revoke():
    account, mint, owner, new, delegate = key(), key(), key(), key(), key()
    out = decoded(spl.set_authority(spl.SetAuthorityParams(program_id=TOKEN_PROGRAM_ID, account=mint, authority=spl.AuthorityType.FREEZE_ACCOUNT, current_authority=owner, new_authority=new)))
    assert out["data"] == {"authorityType": "freezeAccount", "newAuthority": str(new)} and roles(out) == {"account": str(mint), "authority": str(owner)}
    from instruments.token2022.constants import AuthorityType

    out = decoded(t22.set_authority(target=mint, current=owner, authority_type=AuthorityType.PAUSE, new_authority=None))
    assert out["data"] == {"authorityType": "pause", "newAuthority": None}
    out = decoded(t22.close_account(account=account, destination=owner, authority=owner))
    assert out["instructionType"] == "closeAccount" and roles(out)["destination"] == str(owner)
    for builder, name in ((spl.freeze_account, "freezeAccount"), (spl.thaw_account, "thawAccount")):
        params = (spl.FreezeAccountParams if name == "freezeAccount" else spl.ThawAccountParams)(program_id=TOKEN_PROGRAM_ID, account=account, mint=mint, authority=owner)
        out = decoded(builder(params))
        assert out["instructionType"] == name and roles(out)["freezeAuthority"] == str(owner)
    out = decoded(spl.approve(spl.ApproveParams(program_id=TOKEN_PROGRAM_ID, source=account, delegate=delegate, owner=owner, amount=12)))
    assert out["instructionType"] == "approve" and out["data"] == {"amount": "12"} and roles(out)["delegate"] == str(delegate)
    out = decoded(spl.revoke(spl.RevokeParams(program_id=TOKEN_PROGRAM_ID, account=account, owner=owner)))
    assert out["instructionType"] == "revoke"


def test_token_multisig_signers_past_the_named_accounts():
    source, destination, multisig, s1, s2 = key(), key(), key(), key(), key()
    out = decoded(spl.transfer(spl.TransferParams(program_id=TOKEN_PROGRAM_ID, source=source, dest=destination, owner=multisig, amount=1, signers=[s1, s2])))
    assert [a["role"] for a in out["accounts"]] == ["source", "destination", "authority", "multisigSigner", "multisigSigner"]


def test_token_2022_extension_instructions_are_spl_token_unknowns():
    mint = key()
    ix = t22.initialize_permanent_delegate(mint=mint, delegate=key())
    legacy = Instruction(TOKEN_PROGRAM_ID, bytes(ix.data), list(ix.accounts))
    out = decoded(legacy)  # tag 35 is no SPL Token instruction
    assert (out["programName"], out["instructionType"], out["data"]) == ("spl-token", None, None)
    assert out["rawData"] == base64.b64encode(bytes(ix.data)).decode()


# --- Token-2022 extensions and the token-metadata interface --------------------------------


def test_token_2022_mint_extension_initializers():
    mint, authority, program = key(), key(), key()
    cases = [
        (t22.initialize_mint_close_authority(mint=mint, close_authority=authority), "initializeMintCloseAuthority", {"newAuthority": str(authority)}),
        (t22.initialize_permanent_delegate(mint=mint, delegate=authority), "initializePermanentDelegate", {"delegate": str(authority)}),
        (t22.initialize_default_account_state(mint=mint, state=AccountState.FROZEN), "initializeDefaultAccountState", {"accountState": "frozen"}),
        (t22.initialize_metadata_pointer(mint=mint, authority=authority, metadata_address=mint), "initializeMetadataPointer", {"authority": str(authority), "metadataAddress": str(mint)}),
        (t22.initialize_transfer_hook(mint=mint, authority=None, program_id=program), "initializeTransferHook", {"authority": None, "programId": str(program)}),
        (t22.initialize_scaled_ui_amount(mint=mint, authority=authority, multiplier=1.25), "initializeScaledUiAmountConfig", {"authority": str(authority), "multiplier": 1.25}),
        (t22.initialize_pausable(mint=mint, authority=authority), "initializePausableConfig", {"authority": str(authority)}),
        (t22.initialize_confidential_transfer_mint(mint=mint, authority=authority, auto_approve_new_accounts=True, auditor_elgamal_pubkey=bytes(range(32))),
         "initializeConfidentialTransferMint", {"authority": str(authority), "autoApproveNewAccounts": True, "auditorElGamalPubkey": base64.b64encode(bytes(range(32))).decode()}),
        (t22.initialize_confidential_mint_burn(mint=mint, supply_elgamal_pubkey=bytes(32), decryptable_supply=bytes(range(36))),
         "initializeConfidentialMintBurnMint", {"supplyElGamalPubkey": base64.b64encode(bytes(32)).decode(), "decryptableSupply": base64.b64encode(bytes(range(36))).decode()}),
    ]
    for ix, name, data in cases:
        out = decoded(ix)
        assert (out["programName"], out["instructionType"], out["data"]) == ("spl-token-2022", name, data), name
        assert roles(out) == {"mint": str(mint)}


def test_token_2022_extension_updates_name_their_authority():
    mint, authority, program = key(), key(), key()
    cases = [
        (t22.update_default_account_state(mint=mint, freeze_authority=authority, state=AccountState.INITIALIZED), "updateDefaultAccountState", {"accountState": "initialized"}, "freezeAuthority"),
        (t22.update_metadata_pointer(mint=mint, authority=authority, metadata_address=None), "updateMetadataPointer", {"metadataAddress": None}, "authority"),
        (t22.update_transfer_hook(mint=mint, authority=authority, program_id=program), "updateTransferHook", {"programId": str(program)}, "authority"),
        (t22.update_scaled_ui_multiplier(mint=mint, authority=authority, multiplier=2.5, effective_timestamp=1_700_000_000), "updateScaledUiAmountMultiplier",
         {"newMultiplier": 2.5, "effectiveTimestamp": 1_700_000_000}, "authority"),
        (t22.pause(mint=mint, authority=authority), "pause", {}, "authority"),
        (t22.resume(mint=mint, authority=authority), "resume", {}, "authority"),
    ]
    for ix, name, data, role in cases:
        out = decoded(ix)
        assert (out["instructionType"], out["data"]) == (name, data), name
        assert roles(out) == {"mint": str(mint), role: str(authority)}


def test_token_metadata_interface():
    mint, update, minter, new = key(), key(), key(), key()
    out = decoded(t22.initialize_token_metadata(mint=mint, update_authority=update, mint_authority=minter, name="Bond 2030", symbol="B30", uri="https://x.example/b"))
    assert out["instructionType"] == "initializeTokenMetadata" and out["data"] == {"name": "Bond 2030", "symbol": "B30", "uri": "https://x.example/b"}
    assert [a["role"] for a in out["accounts"]] == ["metadata", "updateAuthority", "mint", "mintAuthority"]
    out = decoded(t22.update_token_metadata_field(mint=mint, update_authority=update, field=t22.FIELD_SYMBOL, value="B31"))
    assert out["instructionType"] == "updateTokenMetadataField" and out["data"] == {"field": "symbol", "value": "B31"}
    out = decoded(t22.update_token_metadata_field(mint=mint, update_authority=update, field="isin", value="XS0000000001"))
    assert out["data"] == {"field": "isin", "value": "XS0000000001"}
    out = decoded(t22.remove_token_metadata_key(mint=mint, update_authority=update, key="isin"))
    assert out["instructionType"] == "removeTokenMetadataKey" and out["data"] == {"idempotent": True, "key": "isin"}
    out = decoded(t22.update_token_metadata_authority(mint=mint, current_authority=update, new_authority=new))
    assert out["instructionType"] == "updateTokenMetadataUpdateAuthority" and out["data"] == {"newAuthority": str(new)}


def test_a_layout_cut_short_keeps_its_raw_data_only():
    ix = t22.initialize_permanent_delegate(mint=key(), delegate=key())
    short = Instruction(TOKEN_2022_PROGRAM_ID, bytes(ix.data)[:10], list(ix.accounts))
    out = decoded(short)
    assert (out["instructionType"], out["data"]) == (None, None)
    assert out["rawData"] == base64.b64encode(bytes(ix.data)[:10]).decode() and out["accounts"][0]["role"] is None


# --- Associated Token Account, Address Lookup Table, Compute Budget, Memo, others ------------------


def test_associated_token_account_create_and_idempotent():
    owner, mint = key(), key()
    out = decoded(spl.create_associated_token_account(PAYER, owner, mint, TOKEN_2022_PROGRAM_ID))
    assert (out["programName"], out["instructionType"], out["data"]) == ("spl-associated-token-account", "create", {})
    assert roles(out) == {"source": str(PAYER), "account": str(spl.get_associated_token_address(owner, mint, TOKEN_2022_PROGRAM_ID)), "wallet": str(owner), "mint": str(mint),
                          "systemProgram": decode.SYSTEM_PROGRAM, "tokenProgram": str(TOKEN_2022_PROGRAM_ID), "rentSysvar": "SysvarRent111111111111111111111111111111111"}
    out = decoded(spl.create_idempotent_associated_token_account(PAYER, owner, mint, TOKEN_PROGRAM_ID))
    assert out["instructionType"] == "createIdempotent"


def test_address_lookup_table_instructions():
    authority, recipient = key(), key()
    create, table = solders_native.create_lookup_table({"authority_address": authority, "payer_address": PAYER, "recent_slot": 123_456})
    out = decoded(create)
    assert (out["programName"], out["instructionType"]) == ("address-lookup-table", "createLookupTable")
    assert out["data"]["recentSlot"] == 123_456 and Pubkey.create_program_address([bytes(authority), (123_456).to_bytes(8, "little"), bytes([out["data"]["bumpSeed"]])], Pubkey.from_string(decode.ADDRESS_LOOKUP_TABLE_PROGRAM)) == table
    assert roles(out)["lookupTableAccount"] == str(table) and roles(out)["payerAccount"] == str(PAYER)
    added = [key(), key()]
    out = decoded(solders_native.extend_lookup_table({"lookup_table_address": table, "authority_address": authority, "payer_address": PAYER, "new_addresses": added}))
    assert out["instructionType"] == "extendLookupTable" and out["data"] == {"newAddresses": [str(a) for a in added]}
    for builder, name in ((solders_native.freeze_lookup_table, "freezeLookupTable"), (solders_native.deactivate_lookup_table, "deactivateLookupTable")):
        assert decoded(builder({"lookup_table_address": table, "authority_address": authority}))["instructionType"] == name
    out = decoded(solders_native.close_lookup_table({"lookup_table_address": table, "authority_address": authority, "recipient_address": recipient}))
    assert out["instructionType"] == "closeLookupTable" and roles(out)["recipient"] == str(recipient)


def test_compute_budget_instructions():
    assert decoded(set_compute_unit_limit(200_000))["data"] == {"units": 200_000}
    out = decoded(set_compute_unit_price(7_500))
    assert (out["programName"], out["instructionType"], out["data"]) == ("compute-budget", "setComputeUnitPrice", {"microLamports": 7_500})
    assert decoded(request_heap_frame(64 * 1024))["data"] == {"bytes": 65536}


def test_memo_and_an_unknown_program():
    signer = key()
    out = decoded(Instruction(Pubkey.from_string(decode.MEMO_PROGRAM), "invoice 42 ✓".encode(), [AccountMeta(signer, True, False)]))
    assert (out["programName"], out["instructionType"], out["data"]) == ("spl-memo", "memo", {"memo": "invoice 42 ✓"})
    assert out["accounts"][0]["role"] == "signer"
    other = key()
    out = decoded(Instruction(other, b"\x01\x02\x03", [AccountMeta(signer, False, True)]))
    assert (out["programId"], out["programName"], out["instructionType"], out["data"], out["rawData"]) == (str(other), None, None, None, "AQID")
    assert out["accounts"] == [{"role": None, "onchainId": str(signer), "signer": False, "writable": True, "lookupTable": None, "lookupTableIndex": None}]


# --- the message: accounts, flags, lookup tables ----------------------------------------------------


def test_v0_accounts_loaded_from_a_table_are_named_once_the_record_is_known():
    table, destination, readonly = key(), key(), key()
    ix = sp.transfer(sp.TransferParams(from_pubkey=PAYER, to_pubkey=destination, lamports=1))
    ix = Instruction(ix.program_id, bytes(ix.data), [*ix.accounts, AccountMeta(readonly, False, False)])
    from solders.address_lookup_table_account import AddressLookupTableAccount

    message = MessageV0.try_compile(PAYER, [ix], [AddressLookupTableAccount(table, [destination, readonly])], Hash.default())
    raw = to_bytes_versioned(message)
    unknown = decode.decode_message(raw)
    assert unknown["addressTableLookups"] == [{"onchainId": str(table), "writableIndexes": [0], "readonlyIndexes": [1]}]
    assert [a["onchainId"] for a in unknown["accounts"]] == [str(PAYER), decode.SYSTEM_PROGRAM, None, None]
    loaded = [a for a in unknown["accounts"] if a["lookupTable"]]
    assert [(a["writable"], a["lookupTable"], a["lookupTableIndex"]) for a in loaded] == [(True, str(table), 0), (False, str(table), 1)]
    known = decode.decode_message(raw, {"writable": [str(destination)], "readonly": [str(readonly)]})
    assert roles(known["instructions"][0]) == {"source": str(PAYER), "destination": str(destination), None: str(readonly)}


def test_flags_follow_the_header_and_a_program_is_never_writable():
    signer2, writable, readonly = key(), key(), key()
    program = key()
    ix = Instruction(program, b"", [AccountMeta(signer2, True, False), AccountMeta(writable, False, True), AccountMeta(readonly, False, False)])
    message = Message.new_with_blockhash([ix], PAYER, Hash.default())
    accounts = {a["onchainId"]: (a["signer"], a["writable"]) for a in decode.decode_message(bytes(message))["accounts"]}
    assert accounts == {str(PAYER): (True, True), str(signer2): (True, False), str(writable): (False, True), str(readonly): (False, False), str(program): (False, False)}


def test_system_data_is_a_u32_tag_then_fields():
    # Independent of any encoder: the System program's bincode layout by hand.
    data = struct.pack("<IQ", 2, 42)
    out = decoded(Instruction(Pubkey.from_string(decode.SYSTEM_PROGRAM), data, [AccountMeta(PAYER, True, True), AccountMeta(key(), False, True)]))
    assert (out["instructionType"], out["data"]) == ("transfer", {"lamports": 42})
    assert decoded(Instruction(Pubkey.from_string(decode.SYSTEM_PROGRAM), struct.pack("<I", 99), []))["instructionType"] is None
