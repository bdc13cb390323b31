"""The local node's getSignaturesForAddress states each transaction's place in its block
(`transactionIndex`, as Agave 4.0), and its getBlock lists a block's signatures alone
(`transactionDetails: "signatures"`) in the same order (docs/localnet.md, History)."""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest
from solana.rpc.commitment import Confirmed
from solders.keypair import Keypair
from solders.message import Message
from solders.rpc.responses import GetBlockResp, GetSignaturesForAddressResp
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from transactions.tests.chainkit import funded, next_slot, wait

pytestmark = pytest.mark.chain


def post(url: str, payload) -> object:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def transfers_in_one_slot(chain, url: str, payer: Keypair, target, others: int = 2) -> list[str]:
    """Transfers to ``target`` interleaved with transfers elsewhere, sent in one JSON-RPC
    batch right after a slot starts, so that they land in one slot; their signatures, in
    the order sent."""
    for _attempt in range(4):
        next_slot(chain)
        blockhash = chain.get_latest_blockhash(Confirmed).value.blockhash
        raws = []
        for n in range(2 * others + 1):
            to = target if n % 2 == 0 else Keypair().pubkey()
            message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=1_000_000 + n))], payer.pubkey(), blockhash)
            raws.append(VersionedTransaction(message, [payer]))
        answers = post(url, [{"jsonrpc": "2.0", "id": i, "method": "sendTransaction", "params": [base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}]}
                             for i, tx in enumerate(raws)])
        signatures = [a["result"] for a in sorted(answers, key=lambda a: a["id"])]
        statuses = [wait(chain, tx.signatures[0]) for tx in raws]
        if len({s.slot for s in statuses}) == 1:
            return signatures
    pytest.fail("one batch of sends never landed in one slot")


def test_transaction_index_is_the_place_in_the_block(chain, localnet_url):
    payer = funded(chain)
    target = Keypair().pubkey()
    sent = transfers_in_one_slot(chain, localnet_url, payer, target)
    mine = sent[::2]  # those that touched the target

    while_open = post(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getSignaturesForAddress", "params": [str(target), {"commitment": "confirmed"}]})["result"]
    slot = while_open[0]["slot"]
    block = post(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getBlock",
                                "params": [slot, {"commitment": "confirmed", "transactionDetails": "signatures", "rewards": False, "maxSupportedTransactionVersion": 0}]})["result"]
    # Agave's shape: the block's fields and its signatures, no transactions, no rewards.
    assert set(block) == {"blockHeight", "blockTime", "blockhash", "parentSlot", "previousBlockhash", "signatures"}
    assert GetBlockResp.from_json(json.dumps({"jsonrpc": "2.0", "id": 1, "result": block})).value.signatures is not None
    positions = {s: place for place, s in enumerate(block["signatures"])}
    assert [s for s in block["signatures"] if s in sent] == sent  # executed in the order sent

    after = post(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getSignaturesForAddress", "params": [str(target), {"commitment": "confirmed"}]})["result"]
    for listing in (while_open, after):  # the same whether read while its slot was open or once its block was complete
        assert [e["signature"] for e in listing] == mine[::-1]
        for entry in listing:
            assert isinstance(entry["transactionIndex"], int) and entry["transactionIndex"] == positions[entry["signature"]]
    assert [after[i]["transactionIndex"] for i in range(len(mine))] == sorted((positions[s] for s in mine), reverse=True)
    # The transfers elsewhere sit between them: the index is the place in the block, not among the address's.
    assert all(positions[later] - positions[earlier] >= 2 for earlier, later in zip(mine, mine[1:]))
    # The unmodified SDK still reads the answer (a field it does not model is ignored).
    parsed = GetSignaturesForAddressResp.from_json(json.dumps({"jsonrpc": "2.0", "id": 1, "result": after}))
    assert [str(e.signature) for e in parsed.value] == mine[::-1]
    assert [str(e.signature) for e in chain.get_signatures_for_address(target, commitment=Confirmed).value] == mine[::-1]
