"""The fault front against the shared local node, through solana-py's Client and raw HTTP.

Each behaviour of each named profile is observed; where a profile's numbers would make a test
slow or timing-bound (a 1-second window, 8 slots of lag, 150 slots of history), the test
stretches or shrinks that number and keeps the behaviour. Random faults are predicted from
the seed (faultfront.seeded.draw), never waited for.
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import threading
import time

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solana.exceptions import SolanaRpcException
from solana.rpc.core import RPCException
from solana.rpc.types import TxOpts
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from faultfront.profiles import PROFILES
from faultfront.seeded import draw
from transactions.tests.chainkit import funded, wait

pytestmark = pytest.mark.chain


def profile(name: str, **changes) -> dict:
    out = copy.deepcopy(PROFILES[name])
    for key, value in changes.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


def post(url: str, payload, timeout: float = 5.0) -> tuple[int, dict, object]:
    """(status, headers, JSON or text) over a fresh connection."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", "/", body=json.dumps(payload), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        try:
            return resp.status, dict(resp.headers), json.loads(body)
        except ValueError:
            return resp.status, dict(resp.headers), body.decode()
    finally:
        conn.close()


def call(method: str, params=None, rid=1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or []}


def wait_slots(node: Client, n: int, start: int | None = None) -> int:
    start = node.get_slot(Confirmed).value if start is None else start
    deadline = time.monotonic() + 20
    while (slot := node.get_slot(Confirmed).value) < start + n:
        assert time.monotonic() < deadline, "the slot did not advance"
        time.sleep(0.05)
    return slot


def transfer_tx(node: Client, payer: Keypair, lamports: int, to=None) -> VersionedTransaction:
    blockhash = node.get_latest_blockhash(Confirmed).value.blockhash
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to or Keypair().pubkey(), lamports=lamports))], payer.pubkey(), blockhash)
    return VersionedTransaction(message, [payer])


# -- rate limits ---------------------------------------------------------------------------
def test_rate_limited_caps_sends_at_5_and_refuses_a_whole_batch_with_429_and_retry_after(fault_front):
    # The profile's budgets, windows stretched from 1 s to 60 s so no call ages out mid-test.
    front = fault_front(profile("rate-limited", rate_limits={"methods": {"sendTransaction": [5, 60], "getProgramAccounts": [2, 60]}, "total": [50, 60]}))
    for i in range(5):
        status, _, body = post(front.url, call("sendTransaction", ["bogus"], i))
        assert status == 200 and "error" in body  # forwarded: the node refuses the bytes
    status, headers, body = post(front.url, call("sendTransaction", ["bogus"]))
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60 and body["error"]["code"] == 429
    # getProgramAccounts: 2 fit; a batch of two more is refused whole, then solana-py sees 429.
    client = Client(front.url)
    for _ in range(2):
        client.get_program_accounts(Keypair().pubkey())
    status, headers, _ = post(front.url, [call("getSlot"), call("getProgramAccounts", [str(Keypair().pubkey())], 2)])
    assert status == 429 and "Retry-After" in headers
    with pytest.raises(SolanaRpcException) as refused:
        client.get_program_accounts(Keypair().pubkey())
    assert refused.value.__cause__.response.status_code == 429
    # Total: 50 calls in the window; 5 + 2 + 1 (refused ones count for nothing) so far.
    assert post(front.url, [call("getSlot", rid=i) for i in range(50 - 7)])[0] == 200
    assert post(front.url, call("getSlot"))[0] == 429


def test_method_budgets_count_each_method_on_its_own(fault_front):
    front = fault_front(profile("method-budgets", rate_limits={"each_method": [100, 60], "total": [400, 60], "methods": {"sendTransaction": [20, 60]}}))
    assert post(front.url, [call("getSlot", rid=i) for i in range(100)])[0] == 200
    status, headers, body = post(front.url, call("getSlot"))
    assert status == 429 and "getSlot" in body["error"]["message"] and int(headers["Retry-After"]) >= 1
    assert post(front.url, call("getBlockHeight"))[0] == 200  # another method's budget is untouched
    assert Client(front.url).get_block_height().value >= 0


# -- the lagging view -------------------------------------------------------------------------
def test_lagging_serves_an_old_blockhash_old_balances_and_refuses_min_context_slot(fault_front, localnet_url):
    lag = 3  # the profile's 8, shortened: the test waits for slots
    front = fault_front(profile("lagging", lag={"slots": lag}))
    node, client = Client(localnet_url, commitment=Confirmed), Client(front.url, commitment=Confirmed)
    first = client.get_latest_blockhash().value
    address = Keypair().pubkey()
    assert client.get_balance(address).value == 0
    seen = wait_slots(node, lag + 1)
    wait(node, node.request_airdrop(address, 10**9).value)
    fresh = node.get_latest_blockhash().value.blockhash
    stale = client.get_latest_blockhash()
    assert stale.value.blockhash == first.blockhash != fresh and stale.context.slot <= node.get_slot().value - lag
    assert node.get_balance(address).value == 10**9
    assert client.get_balance(address).value == 0  # the view has not seen the airdrop yet
    wait_slots(node, lag + 1)
    assert client.get_balance(address).value == 10**9
    lagged_slot = client.get_slot().value
    assert lagged_slot <= node.get_slot().value - lag and seen <= node.get_slot().value


def test_lagging_refuses_a_min_context_slot_the_view_has_not_reached(fault_front, localnet_url):
    # A view so far behind (lag over the node's age) that any slot the node reached is ahead of it.
    front = fault_front(profile("lagging", lag={"slots": 10**6}))
    node = Client(localnet_url, commitment=Confirmed)
    address = str(Keypair().pubkey())
    tip = wait_slots(node, 1)
    params = [address, {"commitment": "confirmed", "minContextSlot": tip}]
    assert post(localnet_url, call("getBalance", params))[2]["result"]["value"] == 0  # the node has reached it
    status, _, body = post(front.url, call("getBalance", params))
    assert status == 200 and body["error"] == {"code": -32016, "message": "Minimum context slot has not been reached", "data": {"contextSlot": 0}}
    _, _, body = post(front.url, [call("getBalance", [address, {"commitment": "confirmed"}], 1), call("getSlot", [{"minContextSlot": tip}], 2)])
    assert body[0]["result"]["context"]["slot"] == 0 and body[1]["error"]["code"] == -32016


# -- sends ------------------------------------------------------------------------------------
def _send_fates(seed: int, n: int, drop: float, delay: float) -> list[str]:
    fates = []
    for k in range(n):
        u = draw(seed, "send", "sendTransaction", k)
        fates.append("drop" if u < drop else "delay" if u < drop + delay else "forward")
    return fates


def test_lossy_sends_answer_every_signature_and_drop_or_delay_the_seeds_share(fault_front, localnet_url):
    lossy = PROFILES["lossy-sends"]["sends"]
    seed = next(s for s in range(10_000) if _send_fates(s, 3, lossy["drop"], lossy["delay"]) == ["drop", "delay", "forward"])
    front = fault_front(profile("lossy-sends", sends={"delay_seconds": 1}), seed=seed)
    node = Client(localnet_url, commitment=Confirmed)
    client = Client(front.url, commitment=Confirmed)
    payer = funded(node)
    txs = [transfer_tx(node, payer, 1000 + i) for i in range(3)]
    answered = [client.send_transaction(tx, opts=TxOpts(skip_confirmation=True)).value for tx in txs]
    assert answered == [tx.signatures[0] for tx in txs]
    assert wait(node, txs[2].signatures[0]).err is None  # forwarded at once
    assert wait(node, txs[1].signatures[0]).err is None  # forwarded a second late
    wait_slots(node, 2)
    assert node.get_signature_statuses([txs[0].signatures[0]], search_transaction_history=True).value == [None]
    assert [f["fault"].split()[0] for f in front.faults()] == ["dropped", "delayed"]


# -- transient failures -------------------------------------------------------------------------
def _outcome(url: str) -> str:
    try:
        status, _, body = post(url, call("getHealth"), timeout=0.5)
    except socket.timeout:
        return "timeout"
    except http.client.RemoteDisconnected:
        return "closed"
    except ConnectionResetError:
        return "reset"
    if status != 200:
        return str(status)
    return str(body["error"]["code"]) if "error" in body else "ok"


def test_flaky_answers_502_503_unhealthy_hangs_and_resets_the_same_for_the_same_seed(fault_front):
    flaky = profile("flaky", transient={"hang_seconds": 2})
    runs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        front = fault_front(flaky, seed=seed)
        runs[name] = [_outcome(front.url) for _ in range(150)]
        runs[name + "-log"] = front.faults()
    assert runs["a"] == runs["b"] and runs["a-log"] == runs["b-log"]
    assert runs["a"] != runs["c"]
    assert {"ok", "502", "503", "-32005", "timeout", "reset"} <= set(runs["a"])
    # Predicted from the seed: the k-th HTTP request's draw decides its transport fault.
    t = flaky["transient"]
    judged = 0  # getHealth calls past the transport faults: the k of the -32005 stream
    for k, outcome in enumerate(runs["a"]):
        u = draw(7, "http", "http", k)
        edges = [t["reset"], t["reset"] + t["hang"], t["reset"] + t["hang"] + t["http_502"], t["reset"] + t["hang"] + t["http_502"] + t["http_503"]]
        expected = "reset" if u < edges[0] else "timeout" if u < edges[1] else "502" if u < edges[2] else "503" if u < edges[3] else None
        if expected is None:
            expected = "-32005" if draw(7, "unhealthy", "getHealth", judged) < t["unhealthy"] else "ok"
            judged += 1
        assert outcome == expected, (k, outcome, expected)


def test_unhealthy_is_agaves_node_unhealthy_with_num_slots_behind(fault_front):
    front = fault_front({"transient": {"unhealthy": 1.0, "slots_behind": 12}})
    _, _, body = post(front.url, call("getHealth"))
    assert body["error"] == {"code": -32005, "message": "Node is behind by 12 slots", "data": {"numSlotsBehind": 12}}
    with pytest.raises(RPCException):  # solana-py raises on a send's error answer
        Client(front.url).send_raw_transaction(b"\0" * 100, opts=TxOpts(skip_confirmation=True))
    plain = fault_front({"transient": {"unhealthy": 1.0}})
    assert post(plain.url, call("getHealth"))[2]["error"] == {"code": -32005, "message": "Node is unhealthy", "data": {"numSlotsBehind": None}}
    bad_gateway = fault_front({"transient": {"http_502": 1.0}})
    with pytest.raises(SolanaRpcException) as refused:
        Client(bad_gateway.url).get_slot()
    assert refused.value.__cause__.response.status_code == 502


# -- history ----------------------------------------------------------------------------------
def test_pruned_forgets_transactions_signatures_and_blocks_older_than_it_keeps(fault_front, localnet_url):
    keep = 3  # the profile's 150, shortened
    front = fault_front(profile("pruned", history={"keep_slots": keep}))
    node, client = Client(localnet_url, commitment=Confirmed), Client(front.url, commitment=Confirmed)
    payer = funded(node)
    signature = node.get_signatures_for_address(payer.pubkey()).value[0].signature
    tx = node.get_transaction(signature).value
    wait_slots(node, keep + 2, start=tx.slot)
    assert node.get_transaction(signature).value is not None
    assert client.get_transaction(signature).value is None
    assert client.get_signatures_for_address(payer.pubkey()).value == []
    assert len(node.get_signatures_for_address(payer.pubkey()).value) == 1
    _, _, body = post(front.url, call("getBlock", [tx.slot, {"commitment": "confirmed", "maxSupportedTransactionVersion": 0}]))
    assert body["error"]["code"] == -32001 and body["error"]["message"].startswith(f"Block {tx.slot} cleaned up")
    assert client.get_first_available_block().value > tx.slot


# -- disabled methods and batches -----------------------------------------------------------------
def test_restricted_refuses_its_methods_and_judges_each_call_of_a_batch(fault_front):
    front = fault_front("restricted")
    _, _, body = post(front.url, [call("getSlot", rid=1), call("getProgramAccounts", [str(Keypair().pubkey())], 2), call("getSupply", rid=3)])
    assert "result" in body[0] and body[0]["id"] == 1
    assert body[1] == {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": 2}
    assert body[2]["error"]["code"] == -32601
    status, _, body = post(front.url, call("getTokenLargestAccounts", [str(Keypair().pubkey())]))
    assert status == 403 and body["error"]["code"] == -32000
    with pytest.raises(SolanaRpcException):
        Client(front.url).get_token_largest_accounts(Keypair().pubkey())
    assert Client(front.url).get_slot().value >= 0


# -- within-slot order --------------------------------------------------------------------------
def test_old_blockstore_orders_one_slots_signatures_by_signature(fault_front, localnet_url):
    front = fault_front("old-blockstore")
    node = Client(localnet_url, commitment=Confirmed)
    payer, target = funded(node), Keypair().pubkey()
    txs = [transfer_tx(node, payer, 5000 + i, to=target) for i in range(6)]
    import base64
    batch = [call("sendTransaction", [base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}], i) for i, tx in enumerate(txs)]
    post(localnet_url, batch)  # one batch: one loop turn of the node, so (nearly always) one slot
    for tx in txs:
        wait(node, tx.signatures[0])
    params = [str(target), {"commitment": "confirmed"}]
    direct = post(localnet_url, call("getSignaturesForAddress", params))[2]["result"]
    fronted = post(front.url, call("getSignaturesForAddress", params))[2]["result"]
    assert {e["signature"] for e in direct} == {e["signature"] for e in fronted}
    assert all("transactionIndex" not in e for e in fronted)
    slots = [e["slot"] for e in fronted]
    assert slots == sorted(slots, reverse=True) and max(slots.count(s) for s in slots) >= 2
    from faultfront.b58 import b58decode
    for slot in set(slots):
        order = [b58decode(e["signature"]) for e in fronted if e["slot"] == slot]
        assert order == sorted(order, reverse=True)


# -- the process ----------------------------------------------------------------------------------
def test_sigterm_ends_the_front_within_10_s_even_with_a_hanging_answer(fault_front):
    front = fault_front({"transient": {"hang": 1.0, "hang_seconds": 30}})
    hanging = threading.Thread(target=lambda: _outcome(front.url), daemon=True)
    hanging.start()
    time.sleep(0.2)  # the request is in (the hang lasts 30 s; SIGTERM must not wait for it)
    assert front.stop() < 10
    assert front.proc.returncode is not None


def test_staging_mix_forwards_ordinary_calls(fault_front, localnet_url):
    front = fault_front("staging-mix", seed=next(s for s in range(1000) if all(draw(s, "http", "http", k) > 0.03 for k in range(3))
                                                 and all(draw(s, "unhealthy", "getVersion", k) > 0.01 for k in range(2))))
    assert Client(front.url).get_version().value.solana_core == Client(localnet_url).get_version().value.solana_core
    assert post(front.url, [call("getVersion", rid=1), call("getVersion", rid=2)])[2][1]["id"] == 2


def test_the_websocket_relay_pipes_pubsub_to_the_node_untouched(fault_front, localnet_url):
    from faultfront.testing import free_port

    ws_port = free_port()
    fault_front("flaky", extra_args=("--ws-port", str(ws_port)))
    with socket.create_connection(("127.0.0.1", ws_port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 101")
