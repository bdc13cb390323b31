"""The local node's JSON-RPC methods beyond issue 3's: blocks and their history readers,
commitment and minContextSlot, jsonParsed accounts, supply, cluster and token methods.

Each answer's fields are checked against the Solana JSON-RPC documentation
(solana.com/docs/rpc/http/<method>) and parsed by solders' response types, which mirror
the reference implementation's (a missing or mistyped field fails the parse)."""

from __future__ import annotations

import json
import time

import pytest
import solders.solders as solders_native
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solana.rpc.types import TokenAccountOpts
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.rpc import responses as resp
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from spl.token.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from spl.token.instructions import ApproveCheckedParams, approve_checked

from localnet.testing import rpc_call
from transactions.tests.chainkit import create_ata, create_mint, create_nonce, funded, mint_to, next_slot, send

pytestmark = pytest.mark.chain
MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

# Fields as the reference documentation lists them.
BLOCK_FIELDS = {"blockHeight", "blockTime", "blockhash", "parentSlot", "previousBlockhash", "transactions", "rewards"}
META_FIELDS = {"err", "fee", "preBalances", "postBalances", "innerInstructions", "preTokenBalances", "postTokenBalances", "logMessages", "rewards", "loadedAddresses", "computeUnitsConsumed"}
ACCOUNT_KEY_FIELDS = {"pubkey", "signer", "source", "writable"}


def rpc(url: str, method: str, *params):
    """The whole JSON-RPC answer (result or error)."""
    return rpc_call(url, method, list(params), timeout=10)


def result(url: str, method: str, *params):
    answer = rpc(url, method, *params)
    assert "result" in answer, answer
    return answer["result"]


def parse(kind, answer: dict):
    """solders' parse of a whole answer: the reference's types accept it."""
    return kind.from_json(json.dumps(answer))


def memo(text: str):
    from solders.instruction import Instruction

    return Instruction(MEMO, text.encode(), [])


def landed_slot(chain, signature) -> int:
    return chain.get_signature_statuses([signature]).value[0].slot


# --- blocks -----------------------------------------------------------------------------------
def test_get_block_in_every_level_of_detail(localnet_url, chain):
    payer = funded(chain)
    target = Keypair().pubkey()
    legacy = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=10**6))], v0=False)
    v0 = send(chain, payer, [memo("block memo"), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=10**6))])
    slot = landed_slot(chain, v0)
    confirmed = {"commitment": "confirmed", "maxSupportedTransactionVersion": 0}

    full = rpc(localnet_url, "getBlock", slot, confirmed)
    block = full["result"]
    assert set(block) == BLOCK_FIELDS and block["rewards"] == [] and block["blockHeight"] == slot
    assert block["parentSlot"] == slot - 1 and block["previousBlockhash"] == result(localnet_url, "getBlock", slot - 1, {**confirmed, "transactionDetails": "none"})["blockhash"]
    assert block["blockTime"] == result(localnet_url, "getBlockTime", slot)
    entry = next(tx for tx in block["transactions"] if tx["transaction"]["signatures"][0] == str(v0))
    assert set(entry) == {"transaction", "meta", "version"} and entry["version"] == 0
    assert META_FIELDS <= set(entry["meta"]) and entry["meta"]["err"] is None and entry["meta"]["fee"] == 5000
    assert set(entry["transaction"]["message"]) == {"header", "accountKeys", "recentBlockhash", "instructions", "addressTableLookups"}
    parsed_block = parse(resp.GetBlockResp, full).value
    assert str(parsed_block.blockhash) == block["blockhash"] and len(parsed_block.transactions) == len(block["transactions"])

    # A v0 transaction in the block needs maxSupportedTransactionVersion, as for getTransaction.
    if landed_slot(chain, legacy) == slot:
        assert rpc(localnet_url, "getBlock", slot, {"commitment": "confirmed"})["error"]["code"] == -32015
    signatures = result(localnet_url, "getBlock", slot, {**confirmed, "transactionDetails": "signatures", "rewards": False})
    assert set(signatures) == BLOCK_FIELDS - {"transactions", "rewards"} | {"signatures"} and str(v0) in signatures["signatures"]
    bare = result(localnet_url, "getBlock", slot, {**confirmed, "transactionDetails": "none"})
    assert set(bare) == BLOCK_FIELDS - {"transactions"}
    accounts = result(localnet_url, "getBlock", slot, {**confirmed, "transactionDetails": "accounts"})
    listed = next(tx for tx in accounts["transactions"] if tx["transaction"]["signatures"][0] == str(v0))
    assert set(listed["transaction"]) == {"signatures", "accountKeys"} and all(set(k) == ACCOUNT_KEY_FIELDS for k in listed["transaction"]["accountKeys"])
    assert set(listed["meta"]) == {"err", "status", "fee", "preBalances", "postBalances", "preTokenBalances", "postTokenBalances", "rewards"}
    payer_key = listed["transaction"]["accountKeys"][0]
    assert payer_key == {"pubkey": str(payer.pubkey()), "signer": True, "writable": True, "source": "transaction"}
    as_parsed = result(localnet_url, "getBlock", slot, {**confirmed, "encoding": "jsonParsed"})
    message = next(tx for tx in as_parsed["transactions"] if tx["transaction"]["signatures"][0] == str(v0))["transaction"]["message"]
    assert {"parsed": "block memo", "program": "spl-memo", "programId": str(MEMO), "stackHeight": None} in message["instructions"]
    as_base64 = result(localnet_url, "getBlock", slot, {**confirmed, "encoding": "base64"})
    assert all(tx["transaction"][1] == "base64" for tx in as_base64["transactions"])


def test_block_availability_and_errors(localnet_url, chain):
    while result(localnet_url, "getSlot", {"commitment": "processed"}) < 70:  # a young node: let it grow a history
        time.sleep(0.4)
    open_slot = result(localnet_url, "getSlot", {"commitment": "processed"})
    first = result(localnet_url, "getFirstAvailableBlock")
    assert result(localnet_url, "minimumLedgerSlot") == first >= 1
    assert rpc(localnet_url, "getBlock", first - 1, {"commitment": "confirmed"})["error"] == {"code": -32001, "message": f"Block {first - 1} cleaned up, does not exist on node. First available block: {first}"}
    assert rpc(localnet_url, "getBlock", open_slot + 100, {"commitment": "confirmed"})["error"] == {"code": -32004, "message": f"Block not available for slot {open_slot + 100}"}
    assert rpc(localnet_url, "getBlock", open_slot - 1)["error"]["code"] == -32004  # not rooted yet: `finalized`, the default
    assert rpc(localnet_url, "getBlock", open_slot - 1, {"commitment": "processed"})["error"] == {"code": -32602, "message": "Method does not support commitment below `confirmed`"}
    assert rpc(localnet_url, "getBlockTime", open_slot + 100)["error"]["code"] == -32004
    # Every slot has a block: no slot is skipped.
    span = result(localnet_url, "getBlocks", open_slot - 20, open_slot - 1, {"commitment": "confirmed"})
    assert span == list(range(max(first, open_slot - 20), open_slot))
    assert result(localnet_url, "getBlocksWithLimit", open_slot - 10, 5, {"commitment": "confirmed"}) == list(range(open_slot - 10, open_slot - 5))
    rooted = result(localnet_url, "getBlocks", max(first, open_slot - 60))
    assert rooted and rooted[-1] <= result(localnet_url, "getSlot", {"commitment": "finalized"}) < open_slot - 30
    # The end slot is clamped to the newest block before the range is checked, as by a validator.
    assert result(localnet_url, "getBlocks", open_slot - 3, open_slot + 600_000, {"commitment": "confirmed"})[-1] >= open_slot
    assert rpc(localnet_url, "getBlocksWithLimit", 0, 600_000)["error"] == {"code": -32602, "message": "Limit too large; max 500000"}
    commitment = result(localnet_url, "getBlockCommitment", open_slot - 1)
    assert set(commitment) == {"commitment", "totalStake"}
    parse(resp.GetBlockCommitmentResp, rpc(localnet_url, "getBlockCommitment", open_slot - 1))
    assert chain.get_block_time(open_slot - 1).value == result(localnet_url, "getBlockTime", open_slot - 1)


def test_get_block_history_readers_see_every_transaction_once(localnet_url, chain):
    """Readers that walk blocks: (1) `confirmed`, tip from getSlot, getBlocks(next, tip) then
    next = tip + 1 — safe because the block of the slot still open is served only once it
    ends; (2) solana-py's get_blocks / get_block at `finalized`, the SDK's default."""
    payer = funded(chain)
    start = result(localnet_url, "getSlot", {"commitment": "confirmed"})
    blockhash = chain.get_latest_blockhash().value.blockhash
    sent = []
    from solders.message import Message
    from solders.transaction import VersionedTransaction

    for i in range(12):
        tx = VersionedTransaction(Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1000 + i))], payer.pubkey(), blockhash), [payer])
        sent.append(str(chain.send_transaction(tx).value))
        if i % 4 == 3:
            time.sleep(0.3)  # spread them over a few slots
    seen: list[str] = []
    cursor, deadline = start, time.monotonic() + 20
    while not set(sent) <= set(seen) and time.monotonic() < deadline:
        tip = result(localnet_url, "getSlot", {"commitment": "confirmed"})
        for slot in result(localnet_url, "getBlocks", cursor, tip, {"commitment": "confirmed"}):
            seen += result(localnet_url, "getBlock", slot, {"commitment": "confirmed", "transactionDetails": "signatures", "rewards": False})["signatures"]
        cursor = tip + 1
    mine = [s for s in seen if s in set(sent)]
    assert sorted(mine) == sorted(sent)  # each exactly once

    last = max(landed_slot(chain, Signature.from_string(s)) for s in sent)
    finalized_client = Client(localnet_url, timeout=10)
    deadline = time.monotonic() + 30
    while finalized_client.get_slot().value < last and time.monotonic() < deadline:
        time.sleep(0.4)
    found = []
    for slot in finalized_client.get_blocks(start, last).value:
        block = finalized_client.get_block(slot, max_supported_transaction_version=0).value
        found += [str(tx.transaction.signatures[0]) for tx in block.transactions]
    assert sorted(s for s in found if s in set(sent)) == sorted(sent)


# --- commitment -------------------------------------------------------------------------------
def test_reads_honour_commitment_and_min_context_slot(localnet_url, chain):
    payer, target = funded(chain), Keypair().pubkey()
    send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=31_337))])
    at = {level: rpc(localnet_url, "getBalance", str(target), {"commitment": level})["result"] for level in ("processed", "confirmed", "finalized")}
    assert at["processed"]["value"] == at["confirmed"]["value"] == 31_337
    assert at["finalized"]["value"] == 0  # the transfer is not rooted yet
    assert at["finalized"]["context"]["slot"] <= at["confirmed"]["context"]["slot"] - 32
    assert result(localnet_url, "getBalance", str(target))["value"] == 0  # `finalized` is the default
    assert result(localnet_url, "getAccountInfo", str(target), {"commitment": "finalized"})["value"] is None
    assert result(localnet_url, "getTransactionCount", {"commitment": "finalized"}) < result(localnet_url, "getTransactionCount", {"commitment": "confirmed"})
    finalized_hash = result(localnet_url, "getLatestBlockhash", {"commitment": "finalized"})
    confirmed_hash = result(localnet_url, "getLatestBlockhash", {"commitment": "confirmed"})
    assert finalized_hash["value"]["lastValidBlockHeight"] < confirmed_hash["value"]["lastValidBlockHeight"]
    assert result(localnet_url, "isBlockhashValid", finalized_hash["value"]["blockhash"], {"commitment": "finalized"})["value"] is True
    far = at["confirmed"]["context"]["slot"] + 1000
    for method, params in [("getBalance", [str(target)]), ("getAccountInfo", [str(target)]), ("getMultipleAccounts", [[str(target)]]), ("getSlot", []),
                           ("getBlockHeight", []), ("getEpochInfo", []), ("getLatestBlockhash", []), ("getTransactionCount", []),
                           ("getProgramAccounts", [str(TOKEN_PROGRAM_ID)]), ("getSignaturesForAddress", [str(target)])]:
        index = len(params) if method != "isBlockhashValid" else 1
        config = {"commitment": "confirmed", "minContextSlot": far}
        answer = rpc(localnet_url, method, *params[:index], config)
        assert answer["error"]["code"] == -32016 and answer["error"]["message"] == "Minimum context slot has not been reached", (method, answer)
        assert answer["error"]["data"]["contextSlot"] >= at["confirmed"]["context"]["slot"]
    assert rpc(localnet_url, "getSlot", {"commitment": "recent"})["error"]["code"] == -32602
    # Once the slot is rooted, `finalized` shows the transfer too.
    deadline = time.monotonic() + 30
    while result(localnet_url, "getBalance", str(target))["value"] != 31_337 and time.monotonic() < deadline:
        time.sleep(0.4)
    assert result(localnet_url, "getBalance", str(target))["value"] == 31_337


# --- accounts ---------------------------------------------------------------------------------
def test_json_parsed_accounts_in_the_reference_shapes(localnet_url, chain):
    payer, holder, delegate = funded(chain), Keypair(), Keypair().pubkey()
    nonce = create_nonce(chain, payer, payer.pubkey())
    mint = create_mint(chain, payer, decimals=2)
    ata = create_ata(chain, payer, holder.pubkey(), mint)
    mint_to(chain, payer, mint, ata, 12_345, decimals=2)
    send(chain, payer, [approve_checked(ApproveCheckedParams(program_id=TOKEN_PROGRAM_ID, source=ata, mint=mint, delegate=delegate, owner=holder.pubkey(), amount=345, decimals=2))], [holder])
    mint22 = create_mint(chain, payer, program=TOKEN_2022_PROGRAM_ID)
    ata22 = create_ata(chain, payer, holder.pubkey(), mint22, TOKEN_2022_PROGRAM_ID)
    create_ix, table = solders_native.create_lookup_table({"authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "recent_slot": chain.get_slot().value})
    send(chain, payer, [create_ix])
    send(chain, payer, [solders_native.extend_lookup_table({"lookup_table_address": table, "authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "new_addresses": [mint]})])
    keys = [nonce, ata, mint, ata22, table, Pubkey.from_string("SysvarC1ock11111111111111111111111111111111"), Keypair().pubkey()]
    answer = rpc(localnet_url, "getMultipleAccounts", [str(k) for k in keys], {"encoding": "jsonParsed", "commitment": "confirmed"})
    parse(resp.GetMultipleAccountsMaybeJsonParsedResp, answer)
    *found, missing = answer["result"]["value"]
    assert missing is None
    nonce_data, ata_data, mint_data, ata22_data, table_data, clock_data = [v["data"] for v in found]
    assert nonce_data["program"] == "nonce" and nonce_data["parsed"]["type"] == "initialized"
    assert set(nonce_data["parsed"]["info"]) == {"authority", "blockhash", "feeCalculator"} and nonce_data["parsed"]["info"]["feeCalculator"] == {"lamportsPerSignature": "5000"}
    assert nonce_data["parsed"]["info"]["blockhash"] == str(Pubkey(bytes(chain.get_account_info(nonce).value.data[40:72])))
    info = ata_data["parsed"]["info"]
    assert ata_data["program"] == "spl-token" and ata_data["parsed"]["type"] == "account" and ata_data["space"] == 165
    assert info == {"isNative": False, "mint": str(mint), "owner": str(holder.pubkey()), "state": "initialized", "delegate": str(delegate),
                    "delegatedAmount": {"amount": "345", "decimals": 2, "uiAmount": 3.45, "uiAmountString": "3.45"},
                    "tokenAmount": {"amount": "12345", "decimals": 2, "uiAmount": 123.45, "uiAmountString": "123.45"}}
    assert mint_data["parsed"] == {"type": "mint", "info": {"mintAuthority": str(payer.pubkey()), "supply": "12345", "decimals": 2, "isInitialized": True, "freezeAuthority": None}}
    assert ata22_data["program"] == "spl-token-2022" and ata22_data["parsed"]["info"]["extensions"] == [{"extension": "immutableOwner"}]
    assert table_data["program"] == "address-lookup-table" and table_data["parsed"]["type"] == "lookupTable"
    assert table_data["parsed"]["info"] == {"deactivationSlot": str(2**64 - 1), "lastExtendedSlot": table_data["parsed"]["info"]["lastExtendedSlot"], "lastExtendedSlotStartIndex": 0,
                                            "authority": str(payer.pubkey()), "addresses": [str(mint)]}
    assert clock_data["program"] == "sysvar" and set(clock_data["parsed"]["info"]) == {"slot", "epoch", "epochStartTimestamp", "leaderScheduleEpoch", "unixTimestamp"}
    # Default encodings: getAccountInfo a bare base-58 string (legacy binary), getMultipleAccounts base64.
    assert result(localnet_url, "getAccountInfo", str(payer.pubkey()), {"commitment": "confirmed"})["value"]["data"] == ""
    assert result(localnet_url, "getMultipleAccounts", [str(payer.pubkey())], {"commitment": "confirmed"})["value"][0]["data"] == ["", "base64"]
    assert rpc(localnet_url, "getAccountInfo", str(ata), {"commitment": "confirmed"})["error"]["code"] == -32600  # 165 bytes: too long for base 58
    sliced = rpc(localnet_url, "getAccountInfo", str(ata), {"commitment": "confirmed", "encoding": "jsonParsed", "dataSlice": {"offset": 0, "length": 8}})
    assert sliced["error"] == {"code": -32600, "message": "Sliced account data can only be encoded using binary (base 58) or base64 encoding."}


def test_token_methods(localnet_url, chain):
    payer, delegate = funded(chain), Keypair().pubkey()
    mint = create_mint(chain, payer)
    holders = [Keypair() for _ in range(3)]
    atas = [create_ata(chain, payer, h.pubkey(), mint) for h in holders]
    for amount, ata in zip((300, 100, 200), atas):
        mint_to(chain, payer, mint, ata, amount)
    send(chain, payer, [approve_checked(ApproveCheckedParams(program_id=TOKEN_PROGRAM_ID, source=atas[2], mint=mint, delegate=delegate, owner=holders[2].pubkey(), amount=50, decimals=6))], [holders[2]])
    largest = rpc(localnet_url, "getTokenLargestAccounts", str(mint), {"commitment": "confirmed"})
    parse(resp.GetTokenLargestAccountsResp, largest)
    assert [(a["address"], a["amount"]) for a in largest["result"]["value"]] == [(str(atas[0]), "300"), (str(atas[2]), "200"), (str(atas[1]), "100")]
    assert set(largest["result"]["value"][0]) == {"address", "amount", "decimals", "uiAmount", "uiAmountString"}
    by_delegate = chain.get_token_accounts_by_delegate(delegate, TokenAccountOpts(mint=mint)).value
    assert [a.pubkey for a in by_delegate] == [atas[2]]
    parsed = rpc(localnet_url, "getTokenAccountsByDelegate", str(delegate), {"programId": str(TOKEN_PROGRAM_ID)}, {"encoding": "jsonParsed", "commitment": "confirmed"})
    assert [a["account"]["data"]["parsed"]["info"]["delegatedAmount"]["amount"] for a in parsed["result"]["value"]] == ["50"]
    (item,) = parsed["result"]["value"]
    assert set(item) == {"pubkey", "account"} and set(item["account"]) == {"data", "executable", "lamports", "owner", "rentEpoch", "space"}
    parse(resp.GetTokenAccountsByDelegateJsonParsedResp, parsed)
    assert rpc(localnet_url, "getTokenLargestAccounts", str(payer.pubkey()), {"commitment": "confirmed"})["error"] == {"code": -32602, "message": "Invalid param: not a Token mint"}
    assert rpc(localnet_url, "getTokenAccountsByOwner", str(payer.pubkey()), {"programId": str(Keypair().pubkey())})["error"]["message"] == "Invalid param: unrecognized Token program id"


# --- cluster ----------------------------------------------------------------------------------
def test_cluster_methods_in_the_documented_shapes(localnet_url, chain):
    supply = rpc(localnet_url, "getSupply", {"commitment": "confirmed"})
    parse(resp.GetSupplyResp, supply)
    value = supply["result"]["value"]
    assert set(value) == {"total", "circulating", "nonCirculating", "nonCirculatingAccounts"} and value["total"] == value["circulating"] + value["nonCirculating"]
    assert result(localnet_url, "getSupply", {"excludeNonCirculatingAccountsList": True})["value"]["nonCirculatingAccounts"] == []
    largest = rpc(localnet_url, "getLargestAccounts", {"commitment": "confirmed"})
    parse(resp.GetLargestAccountsResp, largest)
    assert len(largest["result"]["value"]) <= 20 and all(set(a) == {"address", "lamports"} for a in largest["result"]["value"])
    circulating = result(localnet_url, "getLargestAccounts", {"commitment": "confirmed", "filter": "circulating"})["value"]
    non_circulating = result(localnet_url, "getLargestAccounts", {"commitment": "confirmed", "filter": "nonCirculating"})["value"]
    assert [a["address"] for a in non_circulating] == value["nonCirculatingAccounts"] and not {a["address"] for a in circulating} & set(value["nonCirculatingAccounts"])
    schedule = result(localnet_url, "getEpochSchedule")
    assert schedule == {"slotsPerEpoch": 432000, "leaderScheduleSlotOffset": 432000, "warmup": False, "firstNormalEpoch": 0, "firstNormalSlot": 0}
    assert chain.get_epoch_schedule().value.slots_per_epoch == 432000
    sysvar = result(localnet_url, "getAccountInfo", "SysvarEpochSchedu1e111111111111111111111111", {"encoding": "jsonParsed"})["value"]["data"]["parsed"]["info"]
    assert sysvar == schedule  # the sysvar programs read says the same
    identity = result(localnet_url, "getIdentity")
    assert set(identity) == {"identity"} and str(chain.get_identity().value.identity) == identity["identity"]
    (node,) = result(localnet_url, "getClusterNodes")
    assert {"pubkey", "gossip", "tpu", "rpc", "version", "featureSet", "shredVersion"} <= set(node) and node["pubkey"] == identity["identity"]
    port = int(localnet_url.rsplit(":", 1)[1])
    assert node["rpc"].endswith(f":{port}") and node["pubsub"].endswith(f":{port + 1}")
    assert chain.get_cluster_nodes().value[0].rpc == node["rpc"]
    assert result(localnet_url, "getVoteAccounts") == {"current": [], "delinquent": []}
    parse(resp.GetVoteAccountsResp, rpc(localnet_url, "getVoteAccounts"))
    assert rpc(localnet_url, "getHighestSnapshotSlot")["error"] == {"code": -32008, "message": "No snapshot"}
    addresses = [str(Keypair().pubkey()), str(Keypair().pubkey())]
    assert result(localnet_url, "getInflationReward", addresses) == [None, None]
    before = result(localnet_url, "getTransactionCount", {"commitment": "confirmed"})
    assert before <= chain.get_transaction_count().value <= result(localnet_url, "getTransactionCount", {"commitment": "confirmed"})
    samples = rpc(localnet_url, "getRecentPerformanceSamples", 5)
    parse(resp.GetRecentPerformanceSamplesResp, samples)
    assert rpc(localnet_url, "getRecentPerformanceSamples", 721)["error"] == {"code": -32602, "message": "Invalid limit; max 720"}
    status = json.loads(__import__("urllib.request", fromlist=["urlopen"]).urlopen(localnet_url + "/status", timeout=5).read())
    assert {"slot", "finalizedSlot", "transactionCount", "transactionsPerSecond", "queueDepth", "pubsub"} <= set(status)
    assert set(status["queueDepth"]) == {"answersAwaitingCommit", "transactionsAwaitingCommit", "requestsAwaitingSlotEnd"}
    page = __import__("urllib.request", fromlist=["urlopen"]).urlopen(localnet_url + "/", timeout=5).read().decode()
    assert "Local SVM node" in page and "transactionsPerSecond" in page
    next_slot(chain)


def test_token_2022_mint_extensions_parsed(localnet_url, chain):
    from solders.system_program import CreateAccountParams, create_account

    from instruments.token2022 import instructions as t22
    from instruments.token2022.constants import ExtensionType as Ext
    from instruments.token2022.sizes import mint_size, mint_space

    payer, mint, delegate = funded(chain), Keypair(), Keypair().pubkey()
    extensions = {Ext.MINT_CLOSE_AUTHORITY, Ext.PERMANENT_DELEGATE, Ext.METADATA_POINTER, Ext.PAUSABLE, Ext.SCALED_UI_AMOUNT, Ext.TOKEN_METADATA}
    metadata = {"name": "Bond 2031", "symbol": "BND", "uri": "https://example.org/bnd.json"}
    rent = chain.get_minimum_balance_for_rent_exemption(mint_size(extensions, metadata)).value
    m, me = mint.pubkey(), payer.pubkey()
    send(chain, payer, [
        create_account(CreateAccountParams(from_pubkey=me, to_pubkey=m, lamports=rent, space=mint_space(extensions), owner=TOKEN_2022_PROGRAM_ID)),
        t22.initialize_mint_close_authority(mint=m, close_authority=me),
        t22.initialize_permanent_delegate(mint=m, delegate=delegate),
        t22.initialize_metadata_pointer(mint=m, authority=me, metadata_address=m),
        t22.initialize_pausable(mint=m, authority=me),
        t22.initialize_scaled_ui_amount(mint=m, authority=me, multiplier=1.5),
        t22.initialize_mint2(mint=m, decimals=6, mint_authority=me, freeze_authority=None),
        t22.initialize_token_metadata(mint=m, update_authority=me, mint_authority=me, **metadata),
    ], [mint])
    data = result(localnet_url, "getAccountInfo", str(m), {"encoding": "jsonParsed", "commitment": "confirmed"})["value"]["data"]
    assert data["program"] == "spl-token-2022" and data["parsed"]["type"] == "mint"
    by_name = {e["extension"]: e.get("state") for e in data["parsed"]["info"]["extensions"]}
    assert by_name["mintCloseAuthority"] == {"closeAuthority": str(me)}
    assert by_name["permanentDelegate"] == {"delegate": str(delegate)}
    assert by_name["metadataPointer"] == {"authority": str(me), "metadataAddress": str(m)}
    assert by_name["pausableConfig"] == {"authority": str(me), "paused": False}
    assert by_name["scaledUiAmountConfig"] == {"authority": str(me), "multiplier": "1.5", "newMultiplierEffectiveTimestamp": by_name["scaledUiAmountConfig"]["newMultiplierEffectiveTimestamp"], "newMultiplier": "1.5"}
    assert by_name["tokenMetadata"] == {"updateAuthority": str(me), "mint": str(m), "additionalMetadata": [], **metadata}


# --- a node of the test's own: restarts, samples, an older data directory -----------------------
@pytest.fixture()
def own_node(tmp_path):
    from localnet.testing import LocalnetProcess

    node = LocalnetProcess(tmp_path / "data", extra_args=("--sample-seconds", "1"))
    yield node
    node.stop()


def test_blocks_and_finalized_views_survive_kill_9(own_node):
    """Blocks (the slot open at the crash included) and the account versions that reads at
    `finalized` need are as durable as the transactions."""
    url = own_node.start().url
    chain = Client(url, timeout=10, commitment=Confirmed)
    payer, target = funded(chain), Keypair().pubkey()
    signatures = [send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1000 + i))]) for i in range(3)]
    slots = [landed_slot(chain, s) for s in signatures]
    next_slot(chain)
    before = {slot: result(url, "getBlock", slot, {"commitment": "confirmed", "maxSupportedTransactionVersion": 0}) for slot in set(slots[:-1])}
    last = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1000))])  # its slot is open at the crash
    assert result(url, "getBalance", str(target), {"commitment": "finalized"})["value"] == 0
    time.sleep(1.2)
    samples = result(url, "getRecentPerformanceSamples", 10)
    assert samples and all(set(s) == {"slot", "numTransactions", "numNonVoteTransactions", "numSlots", "samplePeriodSecs"} for s in samples)
    assert samples[0]["samplePeriodSecs"] == 1 and samples[0]["numSlots"] >= 1 and sum(s["numTransactions"] for s in samples) >= 5
    own_node.kill()
    own_node.start()
    for slot, block in before.items():
        assert result(url, "getBlock", slot, {"commitment": "confirmed", "maxSupportedTransactionVersion": 0}) == block
    last_slot = landed_slot(chain, last)
    assert str(last) in result(url, "getBlock", last_slot, {"commitment": "confirmed", "maxSupportedTransactionVersion": 0, "transactionDetails": "signatures"})["signatures"]
    tip = result(url, "getSlot", {"commitment": "confirmed"})
    first = result(url, "getFirstAvailableBlock")
    assert result(url, "getBlocks", first, tip - 1, {"commitment": "confirmed"}) == list(range(first, tip))  # none missing across the restart
    # The old state is still what `finalized` shows until the slots are rooted.
    assert result(url, "getBalance", str(target), {"commitment": "finalized"})["value"] == 0
    assert len(result(url, "getRecentPerformanceSamples")) >= len(samples)


def test_a_version_1_data_directory_is_upgraded(own_node):
    """A data directory from before blocks existed: upgraded on open, its transactions stay
    readable, its blocks begin at the slot the upgraded node completes first."""
    import sqlite3

    url = own_node.start().url
    chain = Client(url, timeout=10, commitment=Confirmed)
    payer = funded(chain)
    old = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))])
    own_node.stop()
    db = sqlite3.connect(own_node.data_dir / "ledger.db")
    db.executescript("DROP TABLE blocks; DROP TABLE account_versions; DROP TABLE perf_samples; "
                     "DELETE FROM meta WHERE key IN ('schema_version', 'identity', 'slot_time');")
    db.commit()
    stopped_at = int(db.execute("SELECT value FROM meta WHERE key='slot'").fetchone()[0])
    db.close()
    own_node.start()
    assert chain.get_transaction(old, max_supported_transaction_version=0).value.transaction.meta.err is None
    next_slot(chain)
    first = result(url, "getFirstAvailableBlock")
    assert first == stopped_at  # the slot open when it stopped is completed by the upgraded node
    assert rpc(url, "getBlock", first - 1, {"commitment": "confirmed"})["error"]["code"] == -32001
    fresh = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))])
    next_slot(chain)
    assert str(fresh) in result(url, "getBlock", landed_slot(chain, fresh), {"commitment": "confirmed", "maxSupportedTransactionVersion": 0, "transactionDetails": "signatures"})["signatures"]
    assert result(url, "getIdentity")["identity"]
    db = sqlite3.connect(f"file:{own_node.data_dir / 'ledger.db'}?mode=ro", uri=True)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    db.close()


def test_warp_clock_moves_unix_time_ahead_for_good(own_node):
    """localnetWarpClock: the Clock sysvar (and block times) jump ahead in a new slot and
    stay ahead across a restart; bad arguments are refused."""
    url = own_node.start().url
    assert rpc(url, "localnetWarpClock", 0)["error"]["code"] == -32602
    assert rpc(url, "localnetWarpClock", True)["error"]["code"] == -32602
    confirmed = {"commitment": "confirmed"}
    slot = result(url, "getSlot", confirmed)
    before = int(time.time())
    unix = result(url, "localnetWarpClock", 30 * 86_400)
    warped = result(url, "getSlot", confirmed)
    assert unix >= before + 30 * 86_400 and warped > slot
    assert result(url, "getBlockTime", warped) >= unix
    own_node.stop()
    own_node.start()
    assert result(url, "getBlockTime", result(url, "getSlot", confirmed)) >= unix


def test_a_transaction_over_one_packet_is_refused_as_a_validator_refuses_it(localnet_url, chain):
    """1,232 bytes on the wire at most; the encoded text is checked first (the reference RPC's
    -32602 messages). An unmodified client's send gets the error and nothing executes."""
    import base64

    from solana.rpc.core import RPCException
    from solders.message import Message
    from solders.transaction import Transaction

    payer = funded(chain, 10**9)
    blockhash = chain.get_latest_blockhash().value.blockhash
    memos = [memo("x" * 100) for _ in range(12)]
    tx = Transaction([payer], Message(memos, payer.pubkey()), blockhash)
    wire = bytes(tx)
    assert len(wire) > 1232
    answer = rpc(localnet_url, "sendTransaction", base64.b64encode(wire).decode(), {"encoding": "base64"})
    assert answer["error"]["code"] == -32602 and "too large" in answer["error"]["message"], answer
    padded = base64.b64encode(wire[:1233]).decode()  # under the text limit, over the packet
    assert rpc(localnet_url, "sendTransaction", padded, {"encoding": "base64"})["error"]["message"] == (
        "Invalid params: decoded solana_sdk::transaction::versioned::VersionedTransaction too large: 1233 bytes (max: 1232 bytes)")
    with pytest.raises(RPCException):
        chain.send_raw_transaction(wire)
    assert chain.get_signature_statuses([tx.signatures[0]]).value[0] is None
