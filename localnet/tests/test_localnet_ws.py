"""The local node's PubSub websocket (RPC port + 1) through unmodified clients: solana-py's
websocket client, @solana/kit (installed with npm), and the raw messages checked against
the reference implementation's (agave rpc_pubsub.rs tests, solana.com/docs/rpc/websocket)."""

from __future__ import annotations

import asyncio
import base64
import ctypes
import ctypes.util
import json
import shutil
import sqlite3
import subprocess
import time

import pytest
from solana.rpc.commitment import Confirmed
from solana.rpc.types import MemcmpOpts, TxOpts
from solana.rpc.websocket_api import connect
from solders.keypair import Keypair
from solders.message import Message
from solders.rpc.config import RpcTransactionLogsFilterMentions
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import BurnCheckedParams, CloseAccountParams, burn_checked, close_account
from websockets.exceptions import ConnectionClosed

from localnet.testing import LocalnetProcess, rpc_call
from transactions.tests.chainkit import create_ata, create_mint, funded, mint_to, send, wait
from localnet.tests.jskit import JS_DIR, npm_installed
from localnet.tests.wskit import PubSub, ws_url_of

pytestmark = pytest.mark.chain
SYSTEM = "11111111111111111111111111111111"


@pytest.fixture(scope="module")
def ws_url(localnet_url):
    return ws_url_of(localnet_url)


def signed_transfer(chain, payer: Keypair, target, lamports: int) -> VersionedTransaction:
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=lamports))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    return VersionedTransaction(message, [payer])


def test_solana_py_websocket_client_follows_a_transfer(chain, ws_url):
    """Account, logs (mentions) and signature notifications at `confirmed`, parsed by
    solana-py / solders (which know the reference's types), after the commit."""
    payer, target = funded(chain, 10**9), Keypair().pubkey()
    tx = signed_transfer(chain, payer, target, 4_242)

    async def scenario():
        async with connect(ws_url) as ws:
            await ws.account_subscribe(target, commitment=Confirmed, encoding="base64")
            await ws.logs_subscribe(RpcTransactionLogsFilterMentions(target), commitment=Confirmed)
            await ws.signature_subscribe(tx.signatures[0], commitment=Confirmed)
            ids = [(await ws.recv())[0].result for _ in range(3)]
            assert len(set(ids)) == 3
            chain.send_transaction(tx)
            seen = {}
            while len(seen) < 3:
                for note in await asyncio.wait_for(ws.recv(), 10):
                    seen[type(note).__name__] = note
            return seen

    seen = asyncio.run(scenario())
    status = chain.get_signature_statuses([tx.signatures[0]]).value[0]
    account = seen["AccountNotification"].result
    assert account.value.lamports == 4_242 and str(account.value.owner) == SYSTEM and account.context.slot == status.slot
    logs = seen["LogsNotification"].result
    assert logs.value.signature == tx.signatures[0] and logs.value.err is None
    assert f"Program {SYSTEM} success" in logs.value.logs
    assert seen["SignatureNotification"].result.value.err is None and seen["SignatureNotification"].result.context.slot == status.slot


def test_signature_notifications_on_the_wire(chain, ws_url):
    """receivedSignature then the result, in the reference's exact messages; the
    subscription ends with its notification; one for a signature that already landed
    comes at once."""
    payer = funded(chain, 10**9)
    tx = signed_transfer(chain, payer, Keypair().pubkey(), 1)
    with PubSub(ws_url) as ws:
        sub = ws.subscribe("signatureSubscribe", [str(tx.signatures[0]), {"commitment": "confirmed", "enableReceivedNotification": True}])
        chain.send_transaction(tx)
        received, processed = ws.notification(sub), ws.notification(sub)
        slot = chain.get_signature_statuses([tx.signatures[0]]).value[0].slot
        assert received == {"jsonrpc": "2.0", "method": "signatureNotification", "params": {"result": {"context": {"slot": slot}, "value": "receivedSignature"}, "subscription": sub}}
        assert processed == {"jsonrpc": "2.0", "method": "signatureNotification", "params": {"result": {"context": {"slot": slot}, "value": {"err": None}}, "subscription": sub}}
        assert ws.call("signatureUnsubscribe", [sub]) == {"jsonrpc": "2.0", "error": {"code": -32602, "message": "Invalid subscription id."}, "id": ws.next_id - 1}
        late = ws.subscribe("signatureSubscribe", [str(tx.signatures[0]), {"commitment": "processed"}])
        assert ws.notification(late)["params"]["result"] == {"context": {"slot": slot}, "value": {"err": None}}


def test_account_notifications_in_every_encoding_and_when_closed(chain, ws_url):
    payer, holder = funded(chain), Keypair()
    mint = create_mint(chain, payer)
    ata = create_ata(chain, payer, holder.pubkey(), mint)
    encodings = {"binary": {}, "base58": {"encoding": "base58"}, "base64": {"encoding": "base64"}, "zstd": {"encoding": "base64+zstd"},
                 "parsed": {"encoding": "jsonParsed"}, "slice": {"encoding": "base64", "dataSlice": {"offset": 64, "length": 8}}}
    with PubSub(ws_url) as ws:
        subs = {name: ws.subscribe("accountSubscribe", [str(ata), {**cfg, "commitment": "confirmed"}]) for name, cfg in encodings.items()}
        mint_to(chain, payer, mint, ata, 1_500_000)
        notes = {name: ws.notification(sub)["params"]["result"] for name, sub in subs.items()}
        raw = bytes(chain.get_account_info(ata).value.data)
        values = {name: note["value"] for name, note in notes.items()}
        assert set(values["base64"]) == {"data", "executable", "lamports", "owner", "rentEpoch", "space"}
        assert values["base64"]["data"] == [base64.b64encode(raw).decode(), "base64"] and values["base64"]["space"] == 165
        # 165 bytes are too many for base 58: the reference sends its error text instead
        assert values["binary"]["data"] == "error: data too large for bs58 encoding"
        assert values["base58"]["data"] == ["error: data too large for bs58 encoding", "base58"]
        assert values["slice"]["data"] == [base64.b64encode(raw[64:72]).decode(), "base64"] and values["slice"]["space"] == 165
        assert values["zstd"]["data"][1] == "base64+zstd" and zstd_decompress(base64.b64decode(values["zstd"]["data"][0]), len(raw)) == raw
        parsed = values["parsed"]["data"]
        assert parsed["program"] == "spl-token" and parsed["space"] == 165 and parsed["parsed"]["type"] == "account"
        assert parsed["parsed"]["info"]["tokenAmount"] == {"amount": "1500000", "decimals": 6, "uiAmount": 1.5, "uiAmountString": "1.5"}
        # Emptied and closed in one transaction: the notification shows the reference's empty account.
        send(chain, payer, [burn_checked(BurnCheckedParams(program_id=TOKEN_PROGRAM_ID, account=ata, mint=mint, owner=holder.pubkey(), amount=1_500_000, decimals=6)),
                            close_account(CloseAccountParams(program_id=TOKEN_PROGRAM_ID, account=ata, dest=payer.pubkey(), owner=holder.pubkey()))], [holder])
        closed = ws.notification(subs["base64"])["params"]["result"]["value"]
        assert closed == {"data": ["", "base64"], "executable": False, "lamports": 0, "owner": SYSTEM, "rentEpoch": 0, "space": 0}


def zstd_decompress(frame: bytes, size: int) -> bytes:
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(size)
    written = lib.ZSTD_decompress(out, size, frame, len(frame))
    return out.raw[:written]


def test_program_subscribe_with_filters(chain, ws_url):
    """programSubscribe: dataSize and memcmp filters (solana-py's client), jsonParsed."""
    payer, owner, other = funded(chain), Keypair(), Keypair()
    mint = create_mint(chain, payer)
    mine = create_ata(chain, payer, owner.pubkey(), mint)
    theirs = create_ata(chain, payer, other.pubkey(), mint)

    async def scenario():
        async with connect(ws_url) as ws:
            await ws.program_subscribe(TOKEN_PROGRAM_ID, commitment=Confirmed, encoding="jsonParsed", filters=[165, MemcmpOpts(offset=32, bytes=str(owner.pubkey()))])
            await ws.recv()
            mint_to(chain, payer, mint, theirs, 5)
            mint_to(chain, payer, mint, mine, 7)
            (note,) = await asyncio.wait_for(ws.recv(), 10)
            return note

    note = asyncio.run(scenario())
    assert note.result.value.pubkey == mine
    info = note.result.value.account.data.parsed["info"]
    assert info["owner"] == str(owner.pubkey()) and info["tokenAmount"]["amount"] == "7"
    with PubSub(ws_url) as ws:
        too_many = ws.call("programSubscribe", [str(TOKEN_PROGRAM_ID), {"filters": [{"dataSize": 165}] * 5}])
        assert too_many["error"] == {"code": -32602, "message": "Too many filters provided; max 4"}


def test_logs_subscribe_all_and_failed_transactions(chain, ws_url):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5 * 10**9))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    failing = VersionedTransaction(message, [payer])
    with PubSub(ws_url) as ws:
        sub = ws.subscribe("logsSubscribe", ["all", {"commitment": "confirmed"}])
        votes = ws.subscribe("logsSubscribe", ["allWithVotes", {"commitment": "processed"}])
        chain.send_transaction(failing, opts=TxOpts(skip_preflight=True))
        wait(chain, failing.signatures[0])
        for subscription in (sub, votes):
            while True:  # other tests' transactions may come first on the shared node
                value = ws.notification(subscription)["params"]["result"]["value"]
                if value["signature"] == str(failing.signatures[0]):
                    break
            assert set(value) == {"signature", "err", "logs"}
            assert value["err"] == {"InstructionError": [0, {"Custom": 1}]} and any("insufficient lamports" in line for line in value["logs"])
        assert ws.call("logsUnsubscribe", [sub])["result"] is True


def test_slot_and_root_notifications(ws_url, chain):
    with PubSub(ws_url) as ws:
        slots = ws.subscribe("slotSubscribe")
        roots = ws.subscribe("rootSubscribe")
        first = ws.notification(slots)["params"]["result"]
        second = ws.notification(slots)["params"]["result"]
        assert set(first) == {"parent", "root", "slot"} and second["slot"] == first["slot"] + 1 == second["parent"] + 1
        assert second["root"] == max(0, second["slot"] - 32)
        root = ws.notification(roots)
        assert root["method"] == "rootNotification" and isinstance(root["params"]["result"], int)
        assert ws.call("slotUnsubscribe", [slots])["result"] is True
        ws.backlog.clear()
        assert ws.nothing_for(slots, 1.0)


def test_finalized_subscriptions_wait_for_the_root(chain, ws_url):
    """At `finalized` a change is notified once its slot is rooted (32 slots later), with
    the state as of the root; `confirmed` subscribers heard of it right away."""
    payer, target = funded(chain, 10**9), Keypair().pubkey()
    tx = signed_transfer(chain, payer, target, 777)
    with PubSub(ws_url) as ws:
        final_sig = ws.subscribe("signatureSubscribe", [str(tx.signatures[0]), {"commitment": "finalized"}])
        final_account = ws.subscribe("accountSubscribe", [str(target), {"commitment": "finalized", "encoding": "base64"}])
        final_logs = ws.subscribe("logsSubscribe", [{"mentions": [str(target)]}, {"commitment": "finalized"}])
        quick = ws.subscribe("accountSubscribe", [str(target), {"commitment": "confirmed", "encoding": "base64"}])
        chain.send_transaction(tx)
        sent = time.monotonic()
        assert ws.notification(quick)["params"]["result"]["value"]["lamports"] == 777
        assert time.monotonic() - sent < 8  # long before the root reaches it (32 slots, ~13 s)
        landed = chain.get_signature_statuses([tx.signatures[0]]).value[0].slot
        signature_note = ws.notification(final_sig, 30)["params"]["result"]
        assert signature_note == {"context": {"slot": landed}, "value": {"err": None}}
        assert raw_slot(chain, "finalized") >= landed
        account_note = ws.notification(final_account, 5)["params"]["result"]
        assert account_note["context"]["slot"] == landed and account_note["value"]["lamports"] == 777
        assert ws.notification(final_logs, 5)["params"]["result"]["value"]["signature"] == str(tx.signatures[0])


def raw_slot(chain, commitment: str) -> int:
    return rpc_call(chain._provider.endpoint_uri, "getSlot", [{"commitment": commitment}])["result"]


def test_requests_errors_as_the_reference(ws_url):
    with PubSub(ws_url) as ws:
        assert ws.call("accountSubscribe", ["not-a-key"])["error"] == {"code": -32602, "message": "Invalid Request: Invalid pubkey provided"}
        assert ws.call("signatureSubscribe", ["nope"])["error"] == {"code": -32602, "message": "Invalid Request: Invalid signature provided"}
        two = [str(Keypair().pubkey()), str(Keypair().pubkey())]
        assert ws.call("logsSubscribe", [{"mentions": two}])["error"] == {"code": -32602, "message": "Invalid Request: Only 1 address supported"}
        assert ws.call("accountUnsubscribe", [987654321])["error"] == {"code": -32602, "message": "Invalid subscription id."}
        assert ws.call("blockSubscribe", ["all"])["error"]["code"] == -32601  # off by default, as on a validator (test_localnet_ws_blocks.py)
        assert ws.call("accountSubscribe", [str(Keypair().pubkey()), {"commitment": "recent"}])["error"]["code"] == -32602
        assert ws.call("getVersion")["result"]["solana-core"]
        ws.send("{nope")
        assert json.loads(ws.conn.recv(timeout=5)) == {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": None}
        ws.send({"jsonrpc": "2.0", "method": "ping"})  # a keep-alive without id: no answer
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "slotSubscribe"}, {"jsonrpc": "2.0", "id": 2, "method": "rootSubscribe"}]
        ws.send(batch)
        answers = json.loads(ws.conn.recv(timeout=5))
        assert [a["id"] for a in answers] == [1, 2] and all(isinstance(a["result"], int) for a in answers)


@pytest.fixture(scope="module")
def small_node(tmp_path_factory):
    """A node of its own, with small PubSub limits."""
    node = LocalnetProcess(tmp_path_factory.mktemp("ws-limits") / "data", extra_args=("--ws-max-subscriptions", "3", "--ws-max-message-bytes", "1024")).start()
    yield node
    node.stop()


def test_notification_follows_the_durable_commit(small_node):
    """When the signature notification arrives, the transaction is already in the node's
    SQLite store (read by another connection: committed, not just executed)."""
    from solana.rpc.api import Client

    chain = Client(small_node.url, timeout=10, commitment=Confirmed)
    payer = funded(chain, 10**9)
    db = sqlite3.connect(f"file:{small_node.data_dir / 'ledger.db'}?mode=ro", uri=True)
    try:
        with PubSub(small_node.ws_url) as ws:
            for _ in range(5):
                tx = signed_transfer(chain, payer, Keypair().pubkey(), 1)
                sub = ws.subscribe("signatureSubscribe", [str(tx.signatures[0]), {"commitment": "processed"}])
                chain.send_transaction(tx)
                ws.notification(sub)
                assert db.execute("SELECT err FROM transactions WHERE signature=?", (str(tx.signatures[0]),)).fetchone() == (None,)
    finally:
        db.close()


def test_subscriptions_and_message_size_are_bounded(small_node):
    with PubSub(small_node.ws_url) as ws:
        held = [ws.subscribe("accountSubscribe", [str(Keypair().pubkey())]) for _ in range(3)]
        refused = ws.call("slotSubscribe")
        assert refused["error"]["code"] == -32603 and "subscription limit" in refused["error"]["message"]
        assert ws.call("accountUnsubscribe", [held[0]])["result"] is True
        ws.subscribe("slotSubscribe")  # a freed place can be taken again
    with PubSub(small_node.ws_url) as ws:
        ws.send({"jsonrpc": "2.0", "id": 1, "method": "accountSubscribe", "params": [str(Keypair().pubkey()), {"pad": "x" * 2000}]})
        with pytest.raises(ConnectionClosed) as closed:
            ws.conn.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big


def test_a_hundred_idle_subscribers_leave_rpc_answers_alone(small_node):
    """Subscribers that nothing concerns get nothing, and JSON-RPC keeps answering."""
    from solana.rpc.api import Client

    chain = Client(small_node.url, timeout=10, commitment=Confirmed)
    clients = [PubSub(small_node.ws_url) for _ in range(100)]
    try:
        subs = [(ws, ws.subscribe("accountSubscribe", [str(Keypair().pubkey()), {"commitment": "processed"}])) for ws in clients]
        payer = funded(chain, 10**9)
        for _ in range(10):
            send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))])
        status = json.loads(__import__("urllib.request", fromlist=["urlopen"]).urlopen(small_node.url + "/status", timeout=5).read())
        assert status["pubsub"]["connections"] == 100 and status["pubsub"]["subscriptions"] == 100
        assert all(ws.nothing_for(sub, 0.01) for ws, sub in subs)
    finally:
        for ws in clients:
            ws.close()


# --- @solana/kit, from the npm registry --------------------------------------------------------
@pytest.fixture(scope="module")
def kit_dir():
    """@solana/kit at the versions package-lock.json pins (jskit.npm_installed)."""
    return npm_installed(JS_DIR, "kit", "@solana/kit")


def test_solana_kit_send_and_confirm(kit_dir, localnet_url, ws_url, chain):
    """@solana/kit's airdropFactory and sendAndConfirmTransactionFactory, which wait on
    signatureNotifications and slotNotifications, complete against the node; its
    accountNotifications and getBlock see what landed."""
    run = subprocess.run([shutil.which("node"), "kit_send_and_confirm.mjs", localnet_url, ws_url], cwd=kit_dir, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    first, second = result["transfers"]
    assert result["recipientBalance"] == 3_000_000
    assert result["accountNotification"] == {"slot": result["firstSlot"], "lamports": 1_000_000}
    assert first["signature"] in result["blockSignatures"]
    assert chain.get_transaction(Signature.from_string(second["signature"]), max_supported_transaction_version=0).value.transaction.meta.err is None
    block = rpc_call(localnet_url, "getBlock", [result["firstSlot"], {"commitment": "confirmed", "maxSupportedTransactionVersion": 0, "transactionDetails": "none"}])["result"]
    assert block["blockhash"] == result["blockhash"]
