"""The local node answers simulateTransaction, genesis, the precompiles and the account and
status methods as Agave does (issue 37; docs/localnet-rpc.md, "Simulation", and docs/localnet.md, "Genesis"):
through the unmodified solana-py Client, and raw JSON-RPC for the fields it does not model."""

import base64
import json
import struct
import urllib.request

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from spl.token.constants import ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from spl.token.instructions import create_associated_token_account, get_associated_token_address, sync_native, SyncNativeParams

from localnet.testing import LocalnetProcess
from transactions.tests.chainkit import SYSTEM_PROGRAM, create_mint, funded, send, wait

pytestmark = pytest.mark.chain

U64_MAX = 2**64 - 1
NATIVE_MINT = Pubkey.from_string("So11111111111111111111111111111111111111112")
NATIVE_MINT_2022 = Pubkey.from_string("9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP")
ED25519 = Pubkey.from_string("Ed25519SigVerify111111111111111111111111111")
FIELDS = {"err", "logs", "accounts", "unitsConsumed", "loadedAccountsDataSize", "returnData", "innerInstructions", "replacementBlockhash",
          "fee", "preBalances", "postBalances", "preTokenBalances", "postTokenBalances", "loadedAddresses"}


def rpc(url: str, method: str, *params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json"}), timeout=10) as response:
        return json.loads(response.read())


def simulate(url: str, tx: VersionedTransaction, **cfg) -> dict:
    answer = rpc(url, "simulateTransaction", base64.b64encode(bytes(tx)).decode(), {"encoding": "base64", "commitment": "confirmed", **cfg})
    assert "result" in answer, answer
    return answer["result"]["value"]


def signed(client: Client, payer: Keypair, instructions, signers=()) -> VersionedTransaction:
    blockhash = client.get_latest_blockhash(Confirmed).value.blockhash
    return VersionedTransaction(Message.new_with_blockhash(instructions, payer.pubkey(), blockhash), [payer, *signers])


@pytest.fixture
def client(localnet_url):
    return Client(localnet_url, commitment=Confirmed, timeout=10)


def ed25519_verify(signer: Keypair, message: bytes, *, corrupt: bool = False) -> Instruction:
    """One ed25519 precompile check with everything in the instruction itself (index
    u16::MAX): offsets, then the public key at 16, the signature at 48, the message at 112."""
    signature = bytes(signer.sign_message(message))
    if corrupt:
        signature = bytes([signature[0] ^ 1]) + signature[1:]
    offsets = struct.pack("<BB7H", 1, 0, 48, 0xFFFF, 16, 0xFFFF, 112, len(message), 0xFFFF)
    return Instruction(ED25519, offsets + bytes(signer.pubkey()) + signature + message, [])


# --- simulateTransaction --------------------------------------------------------------------
def test_amount_to_ui_amount_simulation_returns_the_programs_return_data(client, localnet_url):
    payer = funded(client)
    mint = create_mint(client, payer, decimals=6, program=TOKEN_2022_PROGRAM_ID)
    amount_to_ui = Instruction(TOKEN_2022_PROGRAM_ID, bytes([23]) + (1_234_567).to_bytes(8, "little"), [AccountMeta(mint, False, False)])
    value = simulate(localnet_url, signed(client, payer, [amount_to_ui]))
    assert set(value) == FIELDS and value["err"] is None
    assert value["returnData"]["programId"] == str(TOKEN_2022_PROGRAM_ID) and value["returnData"]["data"][1] == "base64"
    assert base64.b64decode(value["returnData"]["data"][0]) == b"1.234567"
    assert value["fee"] == 5000 and value["unitsConsumed"] > 0 and value["loadedAddresses"] == {"writable": [], "readonly": []}
    # solana-py reads the same field
    sim = client.simulate_transaction(signed(client, payer, [amount_to_ui]))
    assert bytes(sim.value.return_data.data) == b"1.234567" and sim.value.return_data.program_id == TOKEN_2022_PROGRAM_ID


def test_simulated_transfer_answers_the_accounts_after_it(client, localnet_url):
    payer, to = funded(client), Keypair().pubkey()
    tx = signed(client, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=2_000_000))])
    before = client.get_balance(payer.pubkey()).value
    value = simulate(localnet_url, tx, accounts={"addresses": [str(to), str(payer.pubkey())], "encoding": "base64"})
    recipient, sender = value["accounts"]
    assert recipient == {"data": ["", "base64"], "executable": False, "lamports": 2_000_000, "owner": "11111111111111111111111111111111", "rentEpoch": U64_MAX, "space": 0}
    assert sender["lamports"] == before - 2_000_000 - 5000
    assert value["preBalances"][:2] == [before, 0] and value["postBalances"][:2] == [before - 2_005_000, 2_000_000]
    assert client.get_balance(to).value == 0  # nothing happened
    refused = rpc(localnet_url, "simulateTransaction", base64.b64encode(bytes(tx)).decode(), {"encoding": "base64", "accounts": {"addresses": [str(to)], "encoding": "base58"}})
    assert refused["error"] == {"code": -32602, "message": "base58 encoding not supported"}
    too_many = [str(Keypair().pubkey()) for _ in range(4)]
    refused = rpc(localnet_url, "simulateTransaction", base64.b64encode(bytes(tx)).decode(), {"encoding": "base64", "accounts": {"addresses": too_many}})
    assert refused["error"] == {"code": -32602, "message": "Too many accounts provided; max 3"}
    sim = client.simulate_transaction(tx)  # solana-py parses the whole answer
    assert sim.value.err is None and sim.value.accounts is None and sim.value.inner_instructions is None


def test_simulated_ata_creation_answers_its_inner_instructions(client, localnet_url):
    payer, owner = funded(client), Keypair().pubkey()
    mint = create_mint(client, payer)
    tx = signed(client, payer, [create_associated_token_account(payer.pubkey(), owner, mint, TOKEN_PROGRAM_ID)])
    assert simulate(localnet_url, tx)["innerInstructions"] is None
    value = simulate(localnet_url, tx, innerInstructions=True, accounts={"addresses": [str(get_associated_token_address(owner, mint))], "encoding": "jsonParsed"})
    (group,) = value["innerInstructions"]
    assert group["index"] == 0
    assert [(i["program"], i["parsed"]["type"]) for i in group["instructions"]] == [
        ("spl-token", "getAccountDataSize"), ("system", "createAccount"), ("spl-token", "initializeImmutableOwner"), ("spl-token", "initializeAccount3")]
    assert {i["stackHeight"] for i in group["instructions"]} == {2}
    (ata,) = value["accounts"]
    assert ata["data"]["parsed"]["info"]["owner"] == str(owner) and ata["rentEpoch"] == U64_MAX
    assert [b["accountIndex"] for b in value["postTokenBalances"]] == [1] and value["preTokenBalances"] == []


def test_failed_simulation_answers_null_accounts_and_the_fee(client, localnet_url):
    payer = funded(client)
    broke = Keypair()
    tx = signed(client, payer, [transfer(TransferParams(from_pubkey=broke.pubkey(), to_pubkey=payer.pubkey(), lamports=1))], [broke])
    value = simulate(localnet_url, tx, accounts={"addresses": [str(payer.pubkey())]})
    assert value["err"] == {"InstructionError": [0, {"Custom": 1}]} and value["accounts"] == [None] and value["fee"] == 10_000


# --- genesis: the native mints ----------------------------------------------------------------
def test_wrapping_sol_into_the_native_mint(client, localnet_url):
    payer = funded(client)
    ata = get_associated_token_address(payer.pubkey(), NATIVE_MINT)
    wait(client, send(client, payer, [
        create_associated_token_account(payer.pubkey(), payer.pubkey(), NATIVE_MINT, TOKEN_PROGRAM_ID),
        transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=ata, lamports=300_000_000)),
        sync_native(SyncNativeParams(TOKEN_PROGRAM_ID, ata)),
    ]))
    balance = client.get_token_account_balance(ata).value
    assert balance.amount == "300000000" and balance.decimals == 9
    supply = client.get_token_supply(NATIVE_MINT).value
    assert supply.amount == "0" and supply.decimals == 9
    parsed = rpc(localnet_url, "getAccountInfo", str(ata), {"encoding": "jsonParsed", "commitment": "confirmed"})["result"]["value"]
    assert parsed["data"]["parsed"]["info"]["isNative"] is True and parsed["rentEpoch"] == U64_MAX


def create_native_mint_2022(payer: Pubkey) -> Instruction:
    """Token-2022's CreateNativeMint (tag 31): what makes its native mint on any cluster."""
    return Instruction(TOKEN_2022_PROGRAM_ID, bytes([31]), [AccountMeta(payer, True, True), AccountMeta(NATIVE_MINT_2022, False, True), AccountMeta(SYSTEM_PROGRAM, False, False)])


def test_token_2022_native_mint_comes_from_create_native_mint(client):
    """A fresh validator has no Token-2022 native mint (the node neither, by default):
    CreateNativeMint makes it, as on mainnet once, and wrapped SOL of Token-2022 works."""
    payer = funded(client)
    if client.get_account_info(NATIVE_MINT_2022).value is None:  # the shared node: only this test creates it
        send(client, payer, [create_native_mint_2022(payer.pubkey())])
    mint_2022 = client.get_account_info(NATIVE_MINT_2022).value
    assert mint_2022.owner == TOKEN_2022_PROGRAM_ID and bytes(mint_2022.data)[44:46] == bytes([9, 1])
    assert client.get_token_supply(NATIVE_MINT_2022).value.decimals == 9
    wsol_2022 = get_associated_token_address(payer.pubkey(), NATIVE_MINT_2022, TOKEN_2022_PROGRAM_ID)
    wait(client, send(client, payer, [create_associated_token_account(payer.pubkey(), payer.pubkey(), NATIVE_MINT_2022, TOKEN_2022_PROGRAM_ID)]))
    assert client.get_token_account_balance(wsol_2022).value.decimals == 9


def test_token_2022_native_mint_at_genesis_only_when_asked(tmp_path):
    """Absent from a fresh data directory; `--token-2022-native-mint` writes it as
    CreateNativeMint leaves it; a data directory that has it keeps it without the flag."""
    node = LocalnetProcess(tmp_path / "node")
    mint = lambda: rpc(node.url, "getAccountInfo", str(NATIVE_MINT_2022), {"encoding": "base64"})["result"]["value"]  # noqa: E731
    try:
        node.start()
        assert mint() is None
        node.stop()
        node.extra_args = ("--token-2022-native-mint",)
        node.start()
        created = mint()
        rent = rpc(node.url, "getMinimumBalanceForRentExemption", 82)["result"]
        assert created == {"data": [base64.b64encode(bytes(44) + bytes([9, 1]) + bytes(36)).decode(), "base64"], "executable": False, "lamports": rent,
                           "owner": str(TOKEN_2022_PROGRAM_ID), "rentEpoch": U64_MAX, "space": 82}
        node.stop()
        node.extra_args = ()
        node.start()
        assert mint() == created
    finally:
        node.stop()


# --- precompiles ------------------------------------------------------------------------------
def test_ed25519_verify_runs_in_send_and_simulate(client, localnet_url):
    payer, signer = funded(client), Keypair()
    tx = signed(client, payer, [ed25519_verify(signer, b"issue 37")])
    assert simulate(localnet_url, tx)["err"] is None
    wait(client, client.send_transaction(tx).value)
    assert client.get_transaction(tx.signatures[0], max_supported_transaction_version=0).value.transaction.meta.err is None
    bad = signed(client, payer, [ed25519_verify(signer, b"issue 37", corrupt=True)])
    assert simulate(localnet_url, bad)["err"] == {"InstructionError": [0, {"Custom": 2}]}
    # with Token-2022 in the same transaction (the assembled runtime: no realloc failure)
    mint = create_mint(client, payer, program=TOKEN_2022_PROGRAM_ID)
    amount_to_ui = Instruction(TOKEN_2022_PROGRAM_ID, bytes([23]) + (5).to_bytes(8, "little"), [AccountMeta(mint, False, False)])
    assert simulate(localnet_url, signed(client, payer, [ed25519_verify(signer, b"x"), amount_to_ui]))["err"] is None
    account = rpc(localnet_url, "getAccountInfo", str(ED25519), {"encoding": "base64"})["result"]["value"]
    assert account == {"data": ["", "base64"], "executable": True, "lamports": 1, "owner": "NativeLoader1111111111111111111111111111111", "rentEpoch": 0, "space": 0}


# --- account and status methods ---------------------------------------------------------------
def test_malformed_signature_is_invalid_params(localnet_url):
    assert rpc(localnet_url, "getSignatureStatuses", ["not-a-signature"])["error"] == {"code": -32602, "message": "Invalid param: Invalid"}
    assert rpc(localnet_url, "getSignatureStatuses", ["1" * 90])["error"] == {"code": -32602, "message": "Invalid param: WrongSize"}
    assert rpc(localnet_url, "getSignatureStatuses", ["5" * 40])["error"] == {"code": -32602, "message": "Invalid param: WrongSize"}


def test_rent_exempt_accounts_report_rent_epoch_u64_max(client, localnet_url):
    payer = funded(client)
    mint = create_mint(client, payer)
    assert client.get_account_info(payer.pubkey()).value.rent_epoch == U64_MAX
    for encoding in ("base64", "jsonParsed"):
        value = rpc(localnet_url, "getAccountInfo", str(mint), {"encoding": encoding, "commitment": "confirmed"})["result"]["value"]
        assert value["rentEpoch"] == U64_MAX
    (multiple,) = rpc(localnet_url, "getMultipleAccounts", [str(mint)], {"commitment": "confirmed"})["result"]["value"]
    assert multiple["rentEpoch"] == U64_MAX
    mints = rpc(localnet_url, "getProgramAccounts", str(TOKEN_PROGRAM_ID), {"encoding": "base64", "commitment": "confirmed", "filters": [{"dataSize": 82}]})["result"]
    assert next(item for item in mints if item["pubkey"] == str(mint))["account"]["rentEpoch"] == U64_MAX


def test_largest_accounts_include_programs_and_sysvars(tmp_path):
    node = LocalnetProcess(tmp_path / "node").start()  # a fresh node: nothing funded pushes them out
    try:
        largest = {a["address"]: a["lamports"] for a in rpc(node.url, "getLargestAccounts", {"filter": "circulating"})["result"]["value"]}
        assert str(TOKEN_2022_PROGRAM_ID) in largest and str(TOKEN_PROGRAM_ID) in largest and str(ASSOCIATED_TOKEN_PROGRAM_ID) in largest
        assert largest[str(NATIVE_MINT)] == 10**9
        everything = rpc(node.url, "getLargestAccounts", {})["result"]["value"]
        assert len(everything) == 20 and everything[0]["address"] == rpc(node.url, "getSupply", {})["result"]["value"]["nonCirculatingAccounts"][0]
        supply = rpc(node.url, "getSupply", {})["result"]["value"]
        assert supply["circulating"] >= sum(largest.values())
        assert rpc(node.url, "getAccountInfo", "SysvarC1ock11111111111111111111111111111111")["result"]["value"]["owner"] == "Sysvar1111111111111111111111111111111111111"
    finally:
        node.stop()
