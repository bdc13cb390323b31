"""getTransaction / getBlock with `jsonParsed` on the local node: instructions (and inner
instructions) of the programs a validator parses come out exactly as its
solana-transaction-status parsers write them (parse_system, parse_token and its extension
modules, parse_associated_token, parse_address_lookup_table, the memo parser); other
programs' instructions stay partially decoded; the account keys carry their roles and the
meta its token balances (docs/localnet-rpc.md, "Parsed transactions")."""

from __future__ import annotations

import base64
import json
import struct

import pytest
import solders.solders as solders_native
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.rpc import responses as resp
from solders.system_program import (
    CreateAccountParams,
    CreateAccountWithSeedParams,
    InitializeNonceAccountParams,
    TransferParams,
    create_account,
    create_account_with_seed,
    initialize_nonce_account,
    transfer,
)
from spl.token.constants import ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from spl.token.instructions import (
    ApproveParams,
    BurnParams,
    CloseAccountParams,
    InitializeMintParams,
    MintToCheckedParams,
    TransferCheckedParams,
    approve,
    burn,
    close_account,
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to_checked,
    transfer_checked,
)

from instruments.token2022 import instructions as t22
from ledger_project.base58 import b58encode
from chain import lookup_tables
from localnet.instructions import parse_instruction
from localnet.testing import rpc_call
from transactions.tests.chainkit import SYSTEM_PROGRAM, funded, next_slot, send

pytestmark = pytest.mark.chain
SYSTEM = str(SYSTEM_PROGRAM)
MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111"
RECENT_BLOCKHASHES = "SysvarRecentB1ockHashes11111111111111111111"
RENT = "SysvarRent111111111111111111111111111111111"
PARSED = {"encoding": "jsonParsed", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}


def parsed_transaction(url: str, signature) -> dict:
    answer = rpc_call(url, "getTransaction", [str(signature), PARSED], timeout=10)
    # solders' types of the reference accept the whole answer (a wrong shape fails here)
    resp.GetTransactionResp.from_json(json.dumps(answer))
    return answer["result"]


def amount(value: int, decimals: int) -> dict:
    digits = str(value).rjust(decimals + 1, "0")
    text = (digits[:-decimals] + "." + digits[-decimals:]).rstrip("0").rstrip(".") if decimals else digits
    return {"amount": str(value), "decimals": decimals, "uiAmount": value / 10**decimals, "uiAmountString": text}


def system(kind: str, info: dict, stack_height=None) -> dict:
    return {"program": "system", "programId": SYSTEM, "parsed": {"type": kind, "info": info}, "stackHeight": stack_height}


def token(program: Pubkey, kind: str, info: dict, stack_height=None) -> dict:
    # Token-2022 instructions are "spl-token" too: one ParsableProgram for both ids.
    return {"program": "spl-token", "programId": str(program), "parsed": {"type": kind, "info": info}, "stackHeight": stack_height}


def ata_create(kind: str, payer, account, wallet, mint, program: Pubkey) -> dict:
    return {"program": "spl-associated-token-account", "programId": str(ASSOCIATED_TOKEN_PROGRAM_ID), "stackHeight": None,
            "parsed": {"type": kind, "info": {"source": str(payer), "account": str(account), "wallet": str(wallet), "mint": str(mint),
                                              "systemProgram": SYSTEM, "tokenProgram": str(program)}}}


def ata_inner(payer, account, wallet, mint, program: Pubkey, lamports: int, space: int, extension_types: list[str]) -> list[dict]:
    """What the ATA program invokes, at stack height 2: the size, the account, its
    immutable owner, its initialization."""
    size = {"mint": str(mint), "extensionTypes": extension_types}
    return [
        token(program, "getAccountDataSize", size, 2),
        system("createAccount", {"source": str(payer), "newAccount": str(account), "lamports": lamports, "space": space, "owner": str(program)}, 2),
        token(program, "initializeImmutableOwner", {"account": str(account)}, 2),
        token(program, "initializeAccount3", {"account": str(account), "mint": str(mint), "owner": str(wallet)}, 2),
    ]


def balance(index: int, mint, owner, program: Pubkey, value: int, decimals: int) -> dict:
    return {"accountIndex": index, "mint": str(mint), "owner": str(owner), "programId": str(program), "uiTokenAmount": amount(value, decimals)}


def in_key_order(*balances: dict) -> list[dict]:
    """Token balances as a validator lists them: in the order of the account keys."""
    return sorted(balances, key=lambda b: b["accountIndex"])


def index_of(tx: dict, key) -> int:
    return [k["pubkey"] for k in tx["transaction"]["message"]["accountKeys"]].index(str(key))


# --- System ---------------------------------------------------------------------------------
def test_system_instructions_and_account_roles(localnet_url, chain):
    payer, dest, new, nonce = funded(chain), Keypair(), Keypair(), Keypair()
    rent = chain.get_minimum_balance_for_rent_exemption(80).value
    seeded = Pubkey.create_with_seed(payer.pubkey(), "vault-7", SYSTEM_PROGRAM)
    signature = send(chain, payer, [
        transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=dest.pubkey(), lamports=1_234_567)),
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=nonce.pubkey(), lamports=rent, space=80, owner=SYSTEM_PROGRAM)),
        initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=nonce.pubkey(), authority=new.pubkey())),
        create_account_with_seed(CreateAccountWithSeedParams(from_pubkey=payer.pubkey(), to_pubkey=seeded, base=payer.pubkey(), seed="vault-7",
                                                             lamports=1_000_000, space=0, owner=SYSTEM_PROGRAM)),
    ], [nonce], v0=False)
    tx = parsed_transaction(localnet_url, signature)
    message = tx["transaction"]["message"]
    assert message["instructions"] == [
        system("transfer", {"source": str(payer.pubkey()), "destination": str(dest.pubkey()), "lamports": 1_234_567}),
        system("createAccount", {"source": str(payer.pubkey()), "newAccount": str(nonce.pubkey()), "lamports": rent, "space": 80, "owner": SYSTEM}),
        system("initializeNonce", {"nonceAccount": str(nonce.pubkey()), "recentBlockhashesSysvar": RECENT_BLOCKHASHES, "rentSysvar": RENT, "nonceAuthority": str(new.pubkey())}),
        system("createAccountWithSeed", {"source": str(payer.pubkey()), "newAccount": str(seeded), "base": str(payer.pubkey()), "seed": "vault-7",
                                         "lamports": 1_000_000, "space": 0, "owner": SYSTEM}),
    ]
    # A legacy message: no addressTableLookups; every key with its role, as a validator lists them.
    assert set(message) == {"accountKeys", "recentBlockhash", "instructions"}
    roles = {k["pubkey"]: (k["signer"], k["writable"], k["source"]) for k in message["accountKeys"]}
    assert roles == {
        str(payer.pubkey()): (True, True, "transaction"), str(nonce.pubkey()): (True, True, "transaction"),
        str(dest.pubkey()): (False, True, "transaction"), str(seeded): (False, True, "transaction"),
        SYSTEM: (False, False, "transaction"), RECENT_BLOCKHASHES: (False, False, "transaction"), RENT: (False, False, "transaction"),
    }
    assert tx["meta"]["innerInstructions"] == [] and "loadedAddresses" not in tx["meta"]
    assert tx["meta"]["preTokenBalances"] == [] == tx["meta"]["postTokenBalances"]

    # getBlock with jsonParsed renders the same transaction the same way.
    block = rpc_call(localnet_url, "getBlock", [tx["slot"], {**PARSED, "rewards": False}], timeout=10)["result"]
    entry = next(e for e in block["transactions"] if e["transaction"]["signatures"][0] == str(signature))
    assert entry["transaction"]["message"] == message and entry["meta"] == {k: v for k, v in tx["meta"].items() if k != "rewards"}


# --- SPL Token --------------------------------------------------------------------------------
def test_spl_token_instructions_inner_instructions_and_token_balances(localnet_url, chain):
    payer, mint, holder, other = funded(chain), Keypair(), Keypair(), Keypair()
    rent = chain.get_minimum_balance_for_rent_exemption(82).value
    created = send(chain, payer, [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=rent, space=82, owner=TOKEN_PROGRAM_ID)),
        initialize_mint(InitializeMintParams(decimals=2, mint=mint.pubkey(), mint_authority=payer.pubkey(), freeze_authority=holder.pubkey(), program_id=TOKEN_PROGRAM_ID)),
    ], [mint], v0=False)
    assert parsed_transaction(localnet_url, created)["transaction"]["message"]["instructions"][1] == token(TOKEN_PROGRAM_ID, "initializeMint", {
        "mint": str(mint.pubkey()), "decimals": 2, "mintAuthority": str(payer.pubkey()), "freezeAuthority": str(holder.pubkey()), "rentSysvar": RENT})

    source = get_associated_token_address(holder.pubkey(), mint.pubkey())
    dest = get_associated_token_address(other.pubkey(), mint.pubkey())
    opened = send(chain, payer, [create_associated_token_account(payer.pubkey(), holder.pubkey(), mint.pubkey())])
    tx = parsed_transaction(localnet_url, opened)
    lamports = tx["meta"]["postBalances"][index_of(tx, source)]
    assert tx["transaction"]["message"]["instructions"] == [ata_create("create", payer.pubkey(), source, holder.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID)]
    assert tx["meta"]["innerInstructions"] == [{"index": 0, "instructions": ata_inner(payer.pubkey(), source, holder.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID, lamports, 165, ["immutableOwner"])}]
    assert tx["meta"]["preTokenBalances"] == [] and tx["meta"]["postTokenBalances"] == [balance(index_of(tx, source), mint.pubkey(), holder.pubkey(), TOKEN_PROGRAM_ID, 0, 2)]

    send(chain, payer, [create_associated_token_account(payer.pubkey(), other.pubkey(), mint.pubkey())])
    moved = send(chain, payer, [
        mint_to_checked(MintToCheckedParams(program_id=TOKEN_PROGRAM_ID, mint=mint.pubkey(), dest=source, mint_authority=payer.pubkey(), amount=10_050, decimals=2)),
        transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint.pubkey(), dest=dest, owner=holder.pubkey(), amount=2_525, decimals=2)),
        approve(ApproveParams(program_id=TOKEN_PROGRAM_ID, source=source, delegate=other.pubkey(), owner=holder.pubkey(), amount=100)),
        burn(BurnParams(program_id=TOKEN_PROGRAM_ID, account=source, mint=mint.pubkey(), owner=holder.pubkey(), amount=25)),
    ], [holder])
    tx = parsed_transaction(localnet_url, moved)
    assert tx["transaction"]["message"]["instructions"] == [
        token(TOKEN_PROGRAM_ID, "mintToChecked", {"mint": str(mint.pubkey()), "account": str(source), "mintAuthority": str(payer.pubkey()), "tokenAmount": amount(10_050, 2)}),
        token(TOKEN_PROGRAM_ID, "transferChecked", {"source": str(source), "mint": str(mint.pubkey()), "destination": str(dest), "authority": str(holder.pubkey()),
                                                    "tokenAmount": amount(2_525, 2)}),
        token(TOKEN_PROGRAM_ID, "approve", {"source": str(source), "delegate": str(other.pubkey()), "owner": str(holder.pubkey()), "amount": "100"}),
        token(TOKEN_PROGRAM_ID, "burn", {"account": str(source), "mint": str(mint.pubkey()), "authority": str(holder.pubkey()), "amount": "25"}),
    ]
    # A v0 message lists its (empty) lookups; balances carry owner, program and UiTokenAmount.
    assert tx["transaction"]["message"]["addressTableLookups"] == []
    src, dst = index_of(tx, source), index_of(tx, dest)
    assert tx["meta"]["preTokenBalances"] == in_key_order(balance(src, mint.pubkey(), holder.pubkey(), TOKEN_PROGRAM_ID, 0, 2),
                                                          balance(dst, mint.pubkey(), other.pubkey(), TOKEN_PROGRAM_ID, 0, 2))
    assert tx["meta"]["postTokenBalances"] == in_key_order(balance(src, mint.pubkey(), holder.pubkey(), TOKEN_PROGRAM_ID, 7_500, 2),
                                                           balance(dst, mint.pubkey(), other.pubkey(), TOKEN_PROGRAM_ID, 2_525, 2))

    closed = send(chain, payer, [
        burn(BurnParams(program_id=TOKEN_PROGRAM_ID, account=dest, mint=mint.pubkey(), owner=other.pubkey(), amount=2_525)),
        close_account(CloseAccountParams(program_id=TOKEN_PROGRAM_ID, account=dest, dest=payer.pubkey(), owner=other.pubkey())),
    ], [other])
    tx = parsed_transaction(localnet_url, closed)
    assert tx["transaction"]["message"]["instructions"][1] == token(TOKEN_PROGRAM_ID, "closeAccount", {
        "account": str(dest), "destination": str(payer.pubkey()), "owner": str(other.pubkey())})
    assert tx["meta"]["postTokenBalances"] == []  # a closed account has no balance after


# --- Token-2022 and its extensions -------------------------------------------------------------
TRANSFER_FEE_CONFIG_SIZE = 108  # two authorities, withheld amount, two TransferFee (epoch, maximum, basis points)


def _initialize_transfer_fee_config(mint: Pubkey, authority: Pubkey, basis_points: int, maximum: int) -> Instruction:
    data = bytes([26, 0]) + b"\x01" + bytes(authority) + b"\x00" + struct.pack("<HQ", basis_points, maximum)
    return Instruction(TOKEN_2022_PROGRAM_ID, data, [AccountMeta(mint, False, True)])


def _transfer_checked_with_fee(source, mint, dest, owner, value: int, decimals: int, fee: int) -> Instruction:
    data = bytes([26, 1]) + struct.pack("<QBQ", value, decimals, fee)
    return Instruction(TOKEN_2022_PROGRAM_ID, data, [AccountMeta(source, False, True), AccountMeta(mint, False, False), AccountMeta(dest, False, True), AccountMeta(owner, True, False)])


def test_token_2022_extension_instructions(localnet_url, chain):
    payer, mint, holder, other = funded(chain), Keypair(), Keypair(), Keypair()
    space = 165 + 1 + (4 + TRANSFER_FEE_CONFIG_SIZE) + (4 + 32) + (4 + 64)
    rent = chain.get_minimum_balance_for_rent_exemption(space + 400).value  # room for the metadata the program appends
    created = send(chain, payer, [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=rent, space=space, owner=TOKEN_2022_PROGRAM_ID)),
        _initialize_transfer_fee_config(mint.pubkey(), payer.pubkey(), 50, 1_000_000),
        t22.initialize_mint_close_authority(mint=mint.pubkey(), close_authority=payer.pubkey()),
        t22.initialize_metadata_pointer(mint=mint.pubkey(), authority=payer.pubkey(), metadata_address=mint.pubkey()),
        t22.initialize_mint2(mint=mint.pubkey(), decimals=6, mint_authority=payer.pubkey(), freeze_authority=None),
        t22.initialize_token_metadata(mint=mint.pubkey(), update_authority=payer.pubkey(), mint_authority=payer.pubkey(), name="Parsed", symbol="PRS", uri="https://parsed.example/p"),
        t22.update_token_metadata_field(mint=mint.pubkey(), update_authority=payer.pubkey(), field="desk", value="rates"),
    ], [mint])
    tx = parsed_transaction(localnet_url, created)
    m, p = str(mint.pubkey()), str(payer.pubkey())
    assert tx["transaction"]["message"]["instructions"][1:] == [
        token(TOKEN_2022_PROGRAM_ID, "initializeTransferFeeConfig", {"mint": m, "transferFeeConfigAuthority": p, "transferFeeBasisPoints": 50, "maximumFee": 1_000_000}),
        token(TOKEN_2022_PROGRAM_ID, "initializeMintCloseAuthority", {"mint": m, "newAuthority": p}),
        token(TOKEN_2022_PROGRAM_ID, "initializeMetadataPointer", {"mint": m, "authority": p, "metadataAddress": m}),
        token(TOKEN_2022_PROGRAM_ID, "initializeMint2", {"mint": m, "decimals": 6, "mintAuthority": p}),
        token(TOKEN_2022_PROGRAM_ID, "initializeTokenMetadata", {"metadata": m, "updateAuthority": p, "mint": m, "mintAuthority": p,
                                                                 "name": "Parsed", "symbol": "PRS", "uri": "https://parsed.example/p"}),
        token(TOKEN_2022_PROGRAM_ID, "updateTokenMetadataField", {"metadata": m, "updateAuthority": p, "field": "desk", "value": "rates"}),
    ]

    source = get_associated_token_address(holder.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID)
    dest = get_associated_token_address(other.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID)
    idempotent = Instruction(ASSOCIATED_TOKEN_PROGRAM_ID, b"\x01", create_associated_token_account(payer.pubkey(), holder.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID).accounts)
    opened = send(chain, payer, [idempotent, create_associated_token_account(payer.pubkey(), other.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID)])
    tx = parsed_transaction(localnet_url, opened)
    assert tx["transaction"]["message"]["instructions"] == [
        ata_create("createIdempotent", payer.pubkey(), source, holder.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID),
        ata_create("create", payer.pubkey(), dest, other.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID),
    ]
    # The account of a transfer-fee mint carries TransferFeeAmount and ImmutableOwner: 165 + 1 + (4 + 8) + 4.
    lamports = tx["meta"]["postBalances"][index_of(tx, source)]
    first = tx["meta"]["innerInstructions"][0]
    assert first == {"index": 0, "instructions": ata_inner(payer.pubkey(), source, holder.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID, lamports, 182, ["immutableOwner"])}
    assert [group["index"] for group in tx["meta"]["innerInstructions"]] == [0, 1]

    moved = send(chain, payer, [
        mint_to_checked(MintToCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, mint=mint.pubkey(), dest=source, mint_authority=payer.pubkey(), amount=5_000_000, decimals=6)),
        _transfer_checked_with_fee(source, mint.pubkey(), dest, holder.pubkey(), 2_000_000, 6, 10_000),
        transfer_checked(TransferCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, source=source, mint=mint.pubkey(), dest=dest, owner=holder.pubkey(), amount=1_000_000, decimals=6)),
    ], [holder])
    tx = parsed_transaction(localnet_url, moved)
    assert tx["transaction"]["message"]["instructions"] == [
        token(TOKEN_2022_PROGRAM_ID, "mintToChecked", {"mint": m, "account": str(source), "mintAuthority": p, "tokenAmount": amount(5_000_000, 6)}),
        token(TOKEN_2022_PROGRAM_ID, "transferCheckedWithFee", {"source": str(source), "mint": m, "destination": str(dest), "authority": str(holder.pubkey()),
                                                               "tokenAmount": amount(2_000_000, 6), "feeAmount": amount(10_000, 6)}),
        token(TOKEN_2022_PROGRAM_ID, "transferChecked", {"source": str(source), "mint": m, "destination": str(dest), "authority": str(holder.pubkey()),
                                                         "tokenAmount": amount(1_000_000, 6)}),
    ]
    # The fees are withheld in the destination: 3,000,000 sent, 10,000 + 5,000 held back.
    src, dst = index_of(tx, source), index_of(tx, dest)
    assert tx["meta"]["postTokenBalances"] == in_key_order(balance(src, mint.pubkey(), holder.pubkey(), TOKEN_2022_PROGRAM_ID, 2_000_000, 6),
                                                           balance(dst, mint.pubkey(), other.pubkey(), TOKEN_2022_PROGRAM_ID, 2_985_000, 6))


# --- Memo, Compute Budget, other programs ---------------------------------------------------------
def test_memo_is_parsed_compute_budget_and_other_programs_stay_raw(localnet_url, chain):
    payer = funded(chain)
    limit, price = set_compute_unit_limit(200_000), set_compute_unit_price(5)
    signature = send(chain, payer, [
        limit,
        price,
        Instruction(MEMO, "settlement 42 ✓".encode(), [AccountMeta(payer.pubkey(), True, False)]),
    ])
    instructions = parsed_transaction(localnet_url, signature)["transaction"]["message"]["instructions"]
    # Compute Budget is not among a validator's parsable programs: partially decoded, as there.
    assert instructions == [
        {"programId": COMPUTE_BUDGET, "accounts": [], "data": b58encode(bytes(limit.data)), "stackHeight": None},
        {"programId": COMPUTE_BUDGET, "accounts": [], "data": b58encode(bytes(price.data)), "stackHeight": None},
        {"program": "spl-memo", "programId": str(MEMO), "parsed": "settlement 42 ✓", "stackHeight": None},
    ]


def test_what_does_not_decode_falls_back_to_the_partially_decoded_form():
    a, b, c = (str(Pubkey.new_unique()) for _ in range(3))
    raw_transfer = bytes(transfer(TransferParams(from_pubkey=Pubkey.from_string(a), to_pubkey=Pubkey.from_string(b), lamports=5)).data)
    # Too few accounts (the reference's key mismatch), an unknown variant, bad UTF-8, a
    # confidential-transfer instruction, an unknown program.
    assert parse_instruction(SYSTEM, [a], raw_transfer, None) == {"programId": SYSTEM, "accounts": [a], "data": b58encode(raw_transfer), "stackHeight": None}
    assert "parsed" not in parse_instruction(SYSTEM, [a, b], struct.pack("<I", 99), None)
    assert parse_instruction(str(MEMO), [], b"\xff\xfe", 2) == {"programId": str(MEMO), "accounts": [], "data": b58encode(b"\xff\xfe"), "stackHeight": 2}
    assert "parsed" not in parse_instruction(str(TOKEN_2022_PROGRAM_ID), [a, b, c], bytes([27, 7]) + bytes(64), None)
    assert "parsed" not in parse_instruction(str(TOKEN_PROGRAM_ID), [a, b, c], bytes([3, 1, 2]), None)  # a transfer without its 8-byte amount
    assert parse_instruction(c, [a], b"\x01", None) == {"programId": c, "accounts": [a], "data": "2", "stackHeight": None}
    # A token multisig authority: the multisig and its signers, as parse_signers writes them.
    d, e = str(Pubkey.new_unique()), str(Pubkey.new_unique())
    assert parse_instruction(str(TOKEN_PROGRAM_ID), [a, b, c, d, e], bytes([3]) + struct.pack("<Q", 9), None)["parsed"] == {
        "type": "transfer", "info": {"source": a, "destination": b, "amount": "9", "multisigAuthority": c, "signers": [d, e]}}


# --- Address Lookup Table ---------------------------------------------------------------------
def test_lookup_table_instructions_and_keys_loaded_from_a_table(localnet_url, chain):
    payer, recipient = funded(chain), Keypair()
    slot = chain.get_slot().value
    create_ix, table = lookup_tables.create(authority=payer.pubkey(), payer=payer.pubkey(), recent_slot=slot)
    extend_ix = lookup_tables.extend(table=table, authority=payer.pubkey(), payer=payer.pubkey(), addresses=[recipient.pubkey()])
    signature = send(chain, payer, [create_ix, extend_ix], v0=False)
    tx = parsed_transaction(localnet_url, signature)
    bump = create_ix.data[12]
    lookup = {"program": "address-lookup-table", "programId": str(solders_native.ADDRESS_LOOKUP_TABLE_ID), "stackHeight": None}
    t, p = str(table), str(payer.pubkey())
    assert tx["transaction"]["message"]["instructions"] == [
        {**lookup, "parsed": {"type": "createLookupTable", "info": {"lookupTableAccount": t, "lookupTableAuthority": p, "payerAccount": p,
                                                                   "systemProgram": SYSTEM, "recentSlot": slot, "bumpSeed": bump}}},
        {**lookup, "parsed": {"type": "extendLookupTable", "info": {"lookupTableAccount": t, "lookupTableAuthority": p, "payerAccount": p,
                                                                   "systemProgram": SYSTEM, "newAddresses": [str(recipient.pubkey())]}}},
    ]
    assert [i["parsed"]["type"] for i in tx["meta"]["innerInstructions"][0]["instructions"]] == ["transfer", "allocate", "assign"]

    next_slot(chain)  # addresses extended in a slot are loadable from the next
    from solders.address_lookup_table_account import AddressLookupTableAccount

    used = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=recipient.pubkey(), lamports=2_000_000))],
                tables=[AddressLookupTableAccount(table, [recipient.pubkey()])])
    tx = parsed_transaction(localnet_url, used)
    message = tx["transaction"]["message"]
    assert message["accountKeys"][-1] == {"pubkey": str(recipient.pubkey()), "writable": True, "signer": False, "source": "lookupTable"}
    assert message["addressTableLookups"] == [{"accountKey": t, "writableIndexes": [0], "readonlyIndexes": []}]
    assert message["instructions"] == [system("transfer", {"source": p, "destination": str(recipient.pubkey()), "lamports": 2_000_000})]


def test_upgradeable_loader_instructions_are_parsed():
    """BPFLoaderUpgradeable (deploys on this node): bincode variants as parse_bpf_loader
    reads them; written bytes in base64, missing optional accounts null."""
    loader = "BPFLoaderUpgradeab1e11111111111111111111111"
    buffer, authority, recipient = (str(Pubkey.new_unique()) for _ in range(3))
    write = struct.pack("<IIQ", 1, 64, 3) + b"\x7fEL"
    assert parse_instruction(loader, [buffer, authority], write, 2) == {
        "program": "bpf-upgradeable-loader", "programId": loader, "stackHeight": 2,
        "parsed": {"type": "write", "info": {"offset": 64, "bytes": "f0VM", "account": buffer, "authority": authority}}}
    assert parse_instruction(loader, [buffer, authority], struct.pack("<I", 4), None)["parsed"] == {
        "type": "setAuthority", "info": {"account": buffer, "authority": authority, "newAuthority": None}}
    assert parse_instruction(loader, [buffer, recipient, authority], struct.pack("<I", 5), None)["parsed"] == {
        "type": "close", "info": {"account": buffer, "recipient": recipient, "authority": authority, "programAccount": None}}
    assert "parsed" not in parse_instruction(loader, [buffer, authority], struct.pack("<IIQ", 1, 0, 99) + b"short", None)


def test_reserved_keys_are_read_only_whatever_the_header_says(localnet_url, chain):
    """A sysvar the message marks writable is shown read-only, as a validator's
    is_maybe_writable shows it (ReservedAccountKeys); the header itself is unchanged."""
    payer, dest = funded(chain), Keypair()
    ix = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=dest.pubkey(), lamports=1_000_000))
    ix = Instruction(ix.program_id, bytes(ix.data), [*ix.accounts, AccountMeta(Pubkey.from_string(RENT), False, True)])
    signature = send(chain, payer, [ix], v0=False)
    keys = {k["pubkey"]: k["writable"] for k in parsed_transaction(localnet_url, signature)["transaction"]["message"]["accountKeys"]}
    assert keys == {str(payer.pubkey()): True, str(dest.pubkey()): True, RENT: False, SYSTEM: False}
    raw = rpc_call(localnet_url, "getTransaction", [str(signature), {"commitment": "confirmed", "encoding": "json"}], timeout=10)["result"]
    assert raw["transaction"]["message"]["header"]["numReadonlyUnsignedAccounts"] == 1  # only the System program


def test_confidential_mint_initializations_are_parsed():
    """The confidential-transfer and confidential mint/burn mint initializations this
    service sends (instruments.token2022): ElGamal keys and ciphertexts in base64 as their
    Display writes them; an absent auditor is null, an absent authority left out."""
    mint, authority = Pubkey.new_unique(), Pubkey.new_unique()
    program = str(TOKEN_2022_PROGRAM_ID)
    ix = t22.initialize_confidential_transfer_mint(mint=mint, authority=authority, auto_approve_new_accounts=True, auditor_elgamal_pubkey=bytes(range(32)))
    assert parse_instruction(program, [str(mint)], bytes(ix.data), None) == token(TOKEN_2022_PROGRAM_ID, "initializeConfidentialTransferMint", {
        "mint": str(mint), "authority": str(authority), "autoApproveNewAccounts": True, "auditorElGamalPubkey": base64.b64encode(bytes(range(32))).decode()})
    ix = t22.initialize_confidential_transfer_mint(mint=mint, authority=None, auto_approve_new_accounts=False)
    assert parse_instruction(program, [str(mint)], bytes(ix.data), None)["parsed"]["info"] == {"mint": str(mint), "autoApproveNewAccounts": False, "auditorElGamalPubkey": None}
    ix = t22.initialize_confidential_mint_burn(mint=mint, supply_elgamal_pubkey=bytes([7] * 32), decryptable_supply=bytes(range(36)))
    assert parse_instruction(program, [str(mint)], bytes(ix.data), None) == token(TOKEN_2022_PROGRAM_ID, "initializeConfidentialMintBurnMint", {
        "mint": str(mint), "supplyElGamalPubkey": base64.b64encode(bytes([7] * 32)).decode(), "decryptableSupply": base64.b64encode(bytes(range(36))).decode()})
