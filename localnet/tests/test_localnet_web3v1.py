"""@solana/web3.js v1 and @solana/spl-token from the npm registry, unmodified, read the local
node's transactions with getParsedTransaction as explorers, wallets and indexers do: a System
transfer and SPL Token / Token-2022 transferChecked come back parsed, in a validator's shapes
(docs/localnet-rpc.md, "Parsed transactions")."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from localnet.tests.jskit import JS_DIR, npm_installed
from localnet.tests.wskit import ws_url_of

pytestmark = pytest.mark.chain
SYSTEM = "11111111111111111111111111111111"


@pytest.fixture(scope="module")
def web3_dir():
    return npm_installed(JS_DIR / "web3v1", "web3v1", "@solana/web3.js")


def test_web3js_v1_get_parsed_transaction(web3_dir, localnet_url):
    run = subprocess.run([shutil.which("node"), "get_parsed_transaction.mjs", localnet_url, ws_url_of(localnet_url)], cwd=web3_dir,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    payer, recipient = result["payer"], result["recipient"]

    assert result["transfer"]["instructions"] == [{
        "program": "system", "programId": SYSTEM, "stackHeight": None,
        "parsed": {"type": "transfer", "info": {"source": payer, "destination": recipient, "lamports": 1_000_000}},
    }]
    assert result["transfer"]["accountKeys"] == [
        {"pubkey": payer, "signer": True, "writable": True, "source": "transaction"},
        {"pubkey": recipient, "signer": False, "writable": True, "source": "transaction"},
        {"pubkey": SYSTEM, "signer": False, "writable": False, "source": "transaction"},
    ]

    ui = {"amount": "1500000", "decimals": 6, "uiAmount": 1.5, "uiAmountString": "1.5"}
    for token in result["tokens"]:  # SPL Token, then Token-2022: both "spl-token" to a validator
        assert token["instructions"] == [{
            "program": "spl-token", "programId": token["programId"], "stackHeight": None,
            "parsed": {"type": "transferChecked", "info": {"source": token["source"], "mint": token["mint"], "destination": token["destination"],
                                                           "authority": payer, "tokenAmount": ui}},
        }]
        after = {b["owner"]: b for b in token["postTokenBalances"]}
        assert after[recipient]["uiTokenAmount"] == ui and after[recipient]["mint"] == token["mint"] and after[recipient]["programId"] == token["programId"]
        assert after[payer]["uiTokenAmount"] == {"amount": "3500000", "decimals": 6, "uiAmount": 3.5, "uiAmountString": "3.5"}
        assert {b["owner"]: b["uiTokenAmount"]["amount"] for b in token["preTokenBalances"]} == {payer: "5000000", recipient: "0"}
