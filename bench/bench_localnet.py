"""SPL Token transfer_checked: the local node over JSON-RPC vs LiteSVM in-process.

Both sides build and sign each transaction in Python the same way; the RPC side sends
it with sendTransaction (preflight on) from a few client threads over keep-alive
connections and then confirms every signature with getSignatureStatuses. Prints one JSON
line. Target (issue 3): rpc_tps / inprocess_tps >= 0.4.
"""

from __future__ import annotations

import base64
import http.client
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solders.keypair import Keypair  # noqa: E402
from solders.litesvm import LiteSVM  # noqa: E402
from solders.message import Message  # noqa: E402
from solders.transaction import VersionedTransaction  # noqa: E402
from spl.token.constants import TOKEN_PROGRAM_ID  # noqa: E402
from spl.token.instructions import TransferCheckedParams, transfer_checked  # noqa: E402

from transactions.localnet.testing import LocalnetProcess  # noqa: E402

N = 3000
THREADS = 4


def setup_tokens(send, payer: Keypair, blockhash):
    """Mint, two token accounts, supply: through real transactions on either side."""
    from solders.system_program import CreateAccountParams, create_account
    from spl.token.instructions import InitializeMintParams, MintToCheckedParams, create_associated_token_account, get_associated_token_address, initialize_mint, mint_to_checked

    mint, receiver = Keypair(), Keypair()
    ixs = [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=10**8, space=82, owner=TOKEN_PROGRAM_ID)),
        initialize_mint(InitializeMintParams(decimals=6, mint=mint.pubkey(), mint_authority=payer.pubkey(), program_id=TOKEN_PROGRAM_ID)),
        create_associated_token_account(payer.pubkey(), payer.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID),
        create_associated_token_account(payer.pubkey(), receiver.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID),
    ]
    source = get_associated_token_address(payer.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID)
    dest = get_associated_token_address(receiver.pubkey(), mint.pubkey(), TOKEN_PROGRAM_ID)
    ixs.append(mint_to_checked(MintToCheckedParams(program_id=TOKEN_PROGRAM_ID, mint=mint.pubkey(), dest=source, mint_authority=payer.pubkey(), amount=10**15, decimals=6)))
    send(VersionedTransaction(Message.new_with_blockhash(ixs, payer.pubkey(), blockhash), [payer, mint]))
    return mint.pubkey(), source, dest


def build(payer, mint, source, dest, amount, blockhash) -> VersionedTransaction:
    ix = transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint, dest=dest, owner=payer.pubkey(), amount=amount, decimals=6))
    return VersionedTransaction(Message.new_with_blockhash([ix], payer.pubkey(), blockhash), [payer])


def inprocess(n: int) -> float:
    svm = LiteSVM()
    payer = Keypair()
    svm.airdrop(payer.pubkey(), 10**12)
    mint, source, dest = setup_tokens(svm.send_transaction, payer, svm.latest_blockhash())
    blockhash = svm.latest_blockhash()
    started = time.perf_counter()
    for i in range(n):
        result = svm.send_transaction(build(payer, mint, source, dest, i + 1, blockhash))
        assert not hasattr(result, "err"), result
    return n / (time.perf_counter() - started)


class Rpc:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self.conn.request("POST", "/", body, {"Content-Type": "application/json"})
        answer = json.loads(self.conn.getresponse().read())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]


def over_rpc(n: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        node = LocalnetProcess(Path(tmp) / "data", log_path=Path(tmp) / "node.log").start()
        try:
            port = node.port
            rpc = Rpc(port)
            payer = Keypair()
            rpc.call("requestAirdrop", [str(payer.pubkey()), 10**12])

            def send(tx):
                return rpc.call("sendTransaction", [base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}])

            blockhash_of = lambda: __import__("solders.hash", fromlist=["Hash"]).Hash.from_string(rpc.call("getLatestBlockhash", [])["value"]["blockhash"])  # noqa: E731
            mint, source, dest = setup_tokens(send, payer, blockhash_of())
            blockhash = blockhash_of()
            signatures: list[str] = []
            lock = threading.Lock()
            per_thread = n // THREADS

            def client(offset: int):
                conn = Rpc(port)
                mine = []
                for i in range(per_thread):
                    tx = build(payer, mint, source, dest, offset + i + 1, blockhash)
                    mine.append(conn.call("sendTransaction", [base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}]))
                with lock:
                    signatures.extend(mine)

            started = time.perf_counter()
            threads = [threading.Thread(target=client, args=(t * per_thread,)) for t in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            confirmed = 0
            for start in range(0, len(signatures), 256):
                statuses = rpc.call("getSignatureStatuses", [signatures[start:start + 256]])["value"]
                confirmed += sum(1 for s in statuses if s and s["err"] is None and s["confirmationStatus"] in ("confirmed", "finalized"))
            elapsed = time.perf_counter() - started
            return per_thread * THREADS / elapsed, confirmed
        finally:
            node.stop()


def main() -> None:
    inproc = inprocess(N)
    rpc_tps, confirmed = over_rpc(N)
    print(json.dumps({"bench": "localnet_transfer_checked", "n": N, "client_threads": THREADS, "inprocess_tps": round(inproc, 1), "rpc_tps": round(rpc_tps, 1),
                      "ratio": round(rpc_tps / inproc, 3), "target_ratio": 0.4, "confirmed": confirmed}))


if __name__ == "__main__":
    main()
