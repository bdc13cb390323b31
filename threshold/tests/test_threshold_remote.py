"""The external player's view of what it signs (threshold/player/solana_message.py):
Solana messages built by solders decoded without a Solana library, shown instruction by
instruction, and refused when the player's key is not a signer; the CLI's ``describe``; and
the HTTP client's errors (remote.Api) against a local server."""

from __future__ import annotations

import base64
import http.server
import json
import threading

import pytest
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message, MessageV0, to_bytes_versioned
from solders.system_program import AdvanceNonceAccountParams, TransferParams, advance_nonce_account, transfer
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import TransferCheckedParams, transfer_checked

from threshold.tests.threshold_kit import CliError, Player, client_env, write
from threshold.player import remote, solana_message


def test_a_durable_nonce_token_transfer_is_decoded_and_described():
    owner, nonce, mint, source, dest = (Keypair().pubkey() for _ in range(5))
    payer = Keypair().pubkey()
    ixs = [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=owner)),
           transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint, dest=dest, owner=owner, amount=1_500_000, decimals=6))]
    blockhash = Hash.new_unique()
    for raw in (bytes(Message.new_with_blockhash(ixs, payer, blockhash)), to_bytes_versioned(MessageV0.try_compile(payer, ixs, [], blockhash))):
        message = solana_message.decode(raw)
        assert message.version == ("v0" if raw[0] & 0x80 else "legacy")
        assert message.fee_payer == str(payer) and message.signers == [str(payer), str(owner)]
        text = solana_message.describe(message)
        assert f"Lifetime: durable nonce {nonce} (value {blockhash})" in text
        assert f"System advance durable nonce {nonce} (authority {owner})" in text
        assert f"Token transferChecked: 1500000 base units (6 decimals) of mint {mint} from {source} to {dest} (owner {owner})" in text
        solana_message.check_signer(message, str(owner))
        with pytest.raises(solana_message.MessageDecodeError, match="is not a signer"):
            solana_message.check_signer(message, str(Keypair().pubkey()))
    assert solana_message.b58decode(str(payer)) == bytes(payer)


def test_a_lamports_transfer_and_garbage():
    source, dest = Keypair().pubkey(), Keypair().pubkey()
    raw = bytes(Message.new_with_blockhash([transfer(TransferParams(from_pubkey=source, to_pubkey=dest, lamports=10_000_000))], source, Hash.new_unique()))
    assert f"System transfer: 10000000 lamports (0.010000000 SOL) from {source} to {dest}" in solana_message.describe(solana_message.decode(raw))
    for bad in (b"", raw[:-3], raw + b"\0", bytes([0x81]) + raw):
        with pytest.raises(solana_message.MessageDecodeError):
            solana_message.decode(bad)


def test_the_cli_describes_a_signing_package(tmp_path):
    source, dest = Keypair().pubkey(), Keypair().pubkey()
    raw = bytes(Message.new_with_blockhash([transfer(TransferParams(from_pubkey=source, to_pubkey=dest, lamports=42))], source, Hash.new_unique()))
    package = write(tmp_path / "package.json", {"type": "frost-signing-package", "message": base64.b64encode(raw).decode()})
    player = Player(tmp_path / "store", client_env(tmp_path))
    answer = player("describe", package)
    assert answer["signers"] == [str(source)] and any("System transfer: 42 lamports" in line for line in answer["description"])
    write(tmp_path / "bad.json", {"message": base64.b64encode(b"\x01\x00").decode()})
    with pytest.raises(CliError) as refused:
        player("describe", tmp_path / "bad.json")
    assert refused.value.error["error"] == "REFUSED_MESSAGE"


class _Answers(http.server.BaseHTTPRequestHandler):
    calls: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Answers.calls.append((self.path, self.headers["Authorization"], self.headers["x-request-id"], body))
        status, payload = (503, {"errors": [{"code": "SERVICE_UNAVAILABLE"}]}) if len(_Answers.calls) == 1 else (404, {"errors": [{"code": "NOT_FOUND", "message": "No such session."}]})
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_the_api_client_retries_with_the_same_request_id_and_reports_the_apis_error():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = remote.Api(f"http://127.0.0.1:{server.server_port}/", "lsk_secret", cluster="CHAIN_LOCALNET", attempts=3)
        with pytest.raises(remote.ApiError) as error:
            api.call("POST", "accounts/dkg/status", {"sessionId": "x"})
        assert error.value.status == 404 and error.value.errors[0]["code"] == "NOT_FOUND"
        (path1, auth, rid1, body), (path2, _, rid2, _) = _Answers.calls
        assert path1 == path2 == "/api/v1/accounts/dkg/status?svmCluster=CHAIN_LOCALNET" and auth == "Bearer lsk_secret"
        assert rid1 == rid2 and body == {"itemData": {"sessionId": "x"}}  # the 503 was retried with the same x-request-id
    finally:
        server.shutdown()


class _WaitingSession(http.server.BaseHTTPRequestHandler):
    """A key generation where this player sent round 1 and another player never does."""

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        players = [{"mpcPlayerCode": "EXT", "identifier": 1, "backend": False, "round1Sent": True, "round2Sent": False, "finished": False},
                   {"mpcPlayerCode": "SLOW", "identifier": 2, "backend": False, "round1Sent": False, "round2Sent": False, "finished": False}]
        data = json.dumps({"sessionId": "s1", "kind": "DKG", "status": "ROUND1", "threshold": 2, "players": players}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_wait_that_runs_out_is_timed_out_not_a_store_error(tmp_path):
    """It was reported as STORE_ERROR, which sends the user looking at a healthy store."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WaitingSession)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        player = Player(tmp_path / "store", client_env(tmp_path))
        player("init", "--scrypt-log-n", "14")
        with pytest.raises(CliError) as caught:
            player("--api-url", f"http://127.0.0.1:{server.server_port}", "--quiet", "api-dkg", "--session", "s1", "--player", "EXT", "--key", "k", "--timeout", "0.3",
                   env_extra={"FROST_PLAYER_API_KEY": "lsk_x"})
    finally:
        server.shutdown()
    assert caught.value.returncode == 1 and caught.value.error["error"] == "TIMED_OUT"
    assert "every round-1 package" in caught.value.error["message"]
