"""Threshold signing on the local node (docs/threshold-signing.md): a 2-of-3 DKG account (two
backend players, one external) signs a lamports transfer through a signing session and Sign
Transaction's dkgSigning; the node accepts it and an unmodified Solana SDK (solana-py's
Client.get_transaction, solders' Signature.verify) verifies the signature. The external
player is the shipped CLI over HTTP (gunicorn) in one test, and speaks the same JSON through
the API in this process in the others; the backend players are a real Celery worker."""

from __future__ import annotations

import base64
import re
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction as db_transaction
from django.db.models import F
from solders.pubkey import Pubkey
from solders.signature import Signature

from accounts.mpc.models import NonceStatus, SigningNonce, SigningPlayer, SigningSession
from accounts.tests.dkg_kit import SIGNING, ApiPlayer, backend_done, create, dkg_item, share_verifies
from threshold.tests.threshold_kit import Player, client_env, parse_result
from threshold import frost
from threshold import messages as M
from conftest import assert_error
from positions.tests.test_api_transfer_network_currency import account, result, transfer
from tests.workers import WebProcess, WorkerProcess, new_queue_name, route_tasks_to, wait_for as wait_until
from transactions import nonce_pool
from localnet.testing import free_port
from transactions.models import Transaction, TransactionEvent
from transactions.responses import wait_for
from transactions.tests.chainkit import wait

pytestmark = pytest.mark.chain
SOL = 10**9
AMOUNT = 10_000_000
LANDED = ("CONFIRMED", "FINALIZED")
SIGN = "/api/v1/transactions/sign"


# --- helpers ------------------------------------------------------------------------------------------


def make_account(api, chain, external: ApiPlayer) -> str:
    """A 2-of-3 account (BACKEND_A, BACKEND_B and ``external``) holding 2 SOL: its address."""
    response = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), [external.code], code="TREASURY"))
    assert response.status_code == 201, response.json()
    session_id = response.json()["dkgSession"]["sessionId"]
    backend_done(session_id)
    final = external.run_dkg(session_id, step=lambda: backend_done(session_id))
    assert final["status"] == "COMPLETED", final
    address = final["account"]["onchainId"]
    wait(chain, chain.request_airdrop(Pubkey.from_string(address), 2 * SOL).value)
    return address


def held_transfer(api, address: str, **envelope) -> dict:
    """A transfer from the DKG account to a managed wallet: PARTIALLY_SIGNED, waiting for the account's signature."""
    held = result(transfer(api, {"onchainId": address}, account(api), {"lamports": AMOUNT}, wait=False, **envelope))
    assert held["status"] == "PARTIALLY_SIGNED", held
    return held


def open_session(api, held: dict, address: str, codes: list[str]):
    return api.call("post", f"{SIGNING}/open", {"itemData": {"transaction": {"offchainId": held["offchainId"]}, "account": {"onchainId": address}, "mpcPlayerCodes": codes}})


def signing_status(api, session_id: str) -> dict:
    response = api.call("post", f"{SIGNING}/status", {"itemData": {"sessionId": session_id}})
    assert response.status_code == 200, response.json()
    return response.json()


def until(api, session_id: str, predicate, what: str, timeout: float = 30.0) -> dict:
    return wait_until(lambda: (lambda s: s if predicate(s) else None)(signing_status(api, session_id)), timeout=timeout, what=what)


def partial(api, held: dict, address: str, session_id: str, code: str, share: str, **query):
    entry = {"account": {"onchainId": address}, "dkgSigning": {"sessionId": session_id, "partialSignatures": [{"mpcPlayerCode": code, "partialSignature": share}]}}
    return api.call("patch", SIGN + ("?wait=confirmed" if query.get("wait") else ""), {"itemData": {"transaction": {"offchainId": held["offchainId"]}, "offPlatformSigning": [entry]}})


def verified_on_chain(chain, held: dict, address: str) -> None:
    """The node's copy of the transaction (solana-py), its account's signature checked by solders."""
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    # A signature the worker aggregates arrives after the request: wait for it too.
    wait_until(lambda: Transaction.unscoped.filter(pk=tx.pk).exclude(status="PARTIALLY_SIGNED").exists(), timeout=30, what="the aggregated signature")
    assert wait_for(tx, "confirmed", timeout=60).status in LANDED, (tx.status, tx.error_message)
    found = chain.get_transaction(Signature.from_string(tx.onchain_id), encoding="base64", max_supported_transaction_version=0).value
    assert found is not None and found.transaction.meta.err is None
    message = base64.b64decode(held["serializedMessage"])
    signature = Signature.from_string(tx.signatures[address])
    assert signature in found.transaction.transaction.signatures
    assert signature.verify(Pubkey.from_string(address), message)


# --- the external player is the shipped CLI, over HTTP ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_2_of_3_account_with_the_cli_as_external_player_signs_a_transfer_the_node_accepts(api, api_key, celery_worker_process, localnet_url, chain, tmp_path):
    port = free_port()
    web = WebProcess(celery_worker_process.queue, port, {"LEDGER_LOCALNET_RPC_URL": localnet_url})
    web.start()
    try:
        env = {**client_env(tmp_path), "FROST_PLAYER_API_URL": f"http://127.0.0.1:{port}", "FROST_PLAYER_API_KEY": api_key.secret}
        cli = Player(tmp_path / "client", env)
        cli("init", "--scrypt-log-n", 14)
        created = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"], code="TREASURY"))
        assert created.status_code == 201, created.json()
        done = cli("api-dkg", "--session", created.json()["dkgSession"]["sessionId"], "--player", "CLIENT_X", "--key", "treasury", "--timeout", 120)
        assert done["status"] == "COMPLETED" and done["account"]["offchainId"] == created.json()["newAccount"]["offchainId"], done
        address = done["address"]
        assert done["account"]["onchainId"] == address and cli("keys")[0]["address"] == address
        wait(chain, chain.request_airdrop(Pubkey.from_string(address), 2 * SOL).value)

        held = held_transfer(api, address)
        opened = open_session(api, held, address, ["BACKEND_B", "CLIENT_X"])
        assert opened.status_code == 201, opened.json()
        session_id = opened.json()["sessionId"]
        proc = cli.popen("api-sign", "--session", session_id, "--player", "CLIENT_X", "--key", "treasury", "--yes", "--timeout", 120)
        out, err = proc.communicate(timeout=180)
        answer = parse_result(proc.returncode, out, err)
        # The player decoded and showed the Solana message before it signed.
        assert f"System transfer: {AMOUNT} lamports" in err and f"from {address}" in err, err
        assert answer["sessionId"] == session_id and answer["transaction"]["offchainId"] == held["offchainId"]
        verified_on_chain(chain, held, address)
        final = signing_status(api, session_id)
        assert final["status"] == "COMPLETED" and all(p["partialSignatureReceived"] for p in final["players"])
    finally:
        web.stop()


# --- any two players, never one; a bad share is refused and blamed ------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_any_two_players_sign_and_one_does_not(api, celery_worker_process, chain):
    external = ApiPlayer(3, "CLIENT_X", api)
    address = make_account(api, chain, external)
    # Backend players alone (t of them): the worker commits, signs, aggregates and adds the signature.
    held = held_transfer(api, address)
    session_id = open_session(api, held, address, ["BACKEND_A", "BACKEND_B"]).json()["sessionId"]
    verified_on_chain(chain, held, address)
    assert signing_status(api, session_id)["status"] == "COMPLETED"
    # A backend player and the external one, either backend player.
    for backend in ("BACKEND_A", "BACKEND_B"):
        held = held_transfer(api, address)
        session_id = open_session(api, held, address, [backend, "CLIENT_X"]).json()["sessionId"]
        external.commit_to(session_id)
        state = until(api, session_id, lambda s: s["signingPackage"] is not None, "the signing package")
        share = external.share_for(state["signingPackage"])
        assert partial(api, held, address, session_id, "CLIENT_X", share).status_code == 200
        verified_on_chain(chain, held, address)
    # One player is not enough: refused before anything is stored.
    held = held_transfer(api, address)
    assert_error(open_session(api, held, address, ["CLIENT_X"]), 400, "INVALID_MPC_PLAYERS", "itemData.mpcPlayerCodes")
    assert not SigningSession.unscoped.filter(transaction__offchain_id=held["offchainId"]).exists()
    # With one share of two in, nothing is signed: the transaction keeps waiting.
    session_id = open_session(api, held, address, ["BACKEND_A", "CLIENT_X"]).json()["sessionId"]
    external.commit_to(session_id)
    until(api, session_id, lambda s: [p["partialSignatureReceived"] for p in s["players"]] == [True, False], "the backend share")
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).status == "PARTIALLY_SIGNED"


@pytest.mark.django_db(transaction=True)
def test_a_wrong_partial_signature_is_refused_naming_its_player(api, celery_worker_process, chain):
    external = ApiPlayer(3, "CLIENT_X", api)
    address = make_account(api, chain, external)
    held = held_transfer(api, address)
    session_id = open_session(api, held, address, ["BACKEND_A", "CLIENT_X"]).json()["sessionId"]
    # Before every commitment is in, there is nothing to sign.
    assert_error(partial(api, held, address, session_id, "CLIENT_X", "11" * 32), 400, "SIGNING_PACKAGE_NOT_READY")
    external.commit_to(session_id)
    state = until(api, session_id, lambda s: s["signingPackage"] is not None and s["players"][0]["partialSignatureReceived"], "the backend share")
    share = external.share_for(state["signingPackage"])
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    events = list(TransactionEvent.objects.filter(transaction=tx).values_list("kind", flat=True))
    wrong = (int.from_bytes(bytes.fromhex(share), "little") + 1).to_bytes(32, "little").hex()
    body = assert_error(partial(api, held, address, session_id, "CLIENT_X", wrong), 400, "INVALID_PARTIAL_SIGNATURE",
                        "itemData.offPlatformSigning[0].dkgSigning.partialSignatures[0].partialSignature")
    assert "CLIENT_X" in body["errors"][0]["message"]
    assert not share_verifies(SigningSession.unscoped.get(offchain_id=session_id).key.public_key_package, state["signingPackage"], 3, wrong)
    # Nothing was stored: the player has no share, the transaction still waits.
    assert SigningPlayer.objects.get(session__offchain_id=session_id, player_code="CLIENT_X").signature_share == ""
    assert list(TransactionEvent.objects.filter(transaction=tx).values_list("kind", flat=True)) == events
    assert Transaction.unscoped.get(pk=tx.pk).status == "PARTIALLY_SIGNED"
    # A backend player's code, another session, a share that is not a scalar.
    assert_error(partial(api, held, address, session_id, "BACKEND_A", share), 400, "NOT_AN_EXTERNAL_PLAYER")
    assert_error(partial(api, held, address, session_id, "CLIENT_Y", share), 400, "UNKNOWN_MPC_PLAYER")
    assert_error(partial(api, held, address, "3f1a0c52-9a2e-4d7b-8f0e-1c2d3e4f5a6b", "CLIENT_X", share), 404, "NOT_FOUND")
    assert_error(partial(api, held, address, session_id, "CLIENT_X", "ff" * 32), 400, "INVALID_PARTIAL_SIGNATURE")
    # The right share completes it.
    assert partial(api, held, address, session_id, "CLIENT_X", share).status_code == 200
    verified_on_chain(chain, held, address)
    # Given again once the transaction was submitted: its state answers (like any signature).
    assert_error(partial(api, held, address, session_id, "CLIENT_X", share), 400, "INVALID_TRANSACTION_STATE")


# --- kill -9 between the rounds -------------------------------------------------------------------------------


class _Lock(threading.Thread):
    """Holds a lock the backend signing step needs (the player's nonce row on PostgreSQL, the
    database's write lock on SQLite) until released: a worker that runs the step waits in it."""

    def __init__(self, nonce_pk: int):
        super().__init__(daemon=True)
        self.nonce_pk, self.held, self.release = nonce_pk, threading.Event(), threading.Event()

    def run(self):
        try:
            with db_transaction.atomic():
                SigningNonce.objects.select_for_update().get(pk=self.nonce_pk)
                self.held.set()
                self.release.wait(60)
        finally:
            connection.close()


def _received(worker: WorkerProcess, task: str) -> int:
    return len(re.findall(rf"Task {re.escape(task)}\[[^\]]+\] received", worker.log_path.read_text(errors="replace")))


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_between_rounds_resumes_without_reusing_a_nonce(api, celery_worker_process, localnet_url, chain):
    queue = new_queue_name()
    route_tasks_to(queue)
    worker = WorkerProcess(queue, {"LEDGER_LOCALNET_RPC_URL": localnet_url})
    worker.start()
    try:
        external = ApiPlayer(3, "CLIENT_X", api)
        address = make_account(api, chain, external)
        nonce_pool.nonce_pool_fill(cluster="CHAIN_LOCALNET", target=4)  # stays above the low-water mark: no fill queued
        held = held_transfer(api, address, svmTransactionConfig={"messageLifetimeStrategy": "DURABLE_NONCE"})
        session_id = open_session(api, held, address, ["BACKEND_A", "CLIENT_X"]).json()["sessionId"]
        until(api, session_id, lambda s: s["players"][0]["committed"], "BACKEND_A's commitment")
        # Round one done for the backend player; the worker dies before round two.
        worker.kill()
        # A durable nonce keeps the transaction signable: the session stays open for hours.
        hours = timedelta(hours=6)
        Transaction.unscoped.filter(offchain_id=held["offchainId"]).update(txn_timestamp=F("txn_timestamp") - hours)
        SigningSession.unscoped.filter(offchain_id=session_id).update(created_at=F("created_at") - hours)
        nonce = SigningNonce.objects.get(session__offchain_id=session_id, player_code="BACKEND_A")
        assert nonce.status == NonceStatus.FRESH
        external.commit_to(session_id)  # fixes the package; the kick waits in the broker
        package = signing_status(api, session_id)["signingPackage"]
        assert package is not None
        # The restarted worker runs into the signing step and is killed inside it.
        lock = _Lock(nonce.pk)
        lock.start()
        assert lock.held.wait(10)
        seen = _received(worker, "ledger.accounts.mpc_signing_advance")
        worker.start()
        wait_until(lambda: _received(worker, "ledger.accounts.mpc_signing_advance") > seen, timeout=60, what="the signing step to start")
        time.sleep(1.0)
        worker.kill()
        lock.release.set()
        lock.join(10)
        assert SigningNonce.objects.get(pk=nonce.pk).status == NonceStatus.FRESH  # nothing consumed, nothing signed
        # Resumed by the next worker: the same nonces sign the same package, once.
        worker.start()
        until(api, session_id, lambda s: s["players"][0]["partialSignatureReceived"], "BACKEND_A's share", timeout=60)
        assert partial(api, held, address, session_id, "CLIENT_X", external.share_for(package)).status_code == 200
        verified_on_chain(chain, held, address)
        rows = list(SigningNonce.objects.filter(session__offchain_id=session_id))
        session = SigningSession.unscoped.get(offchain_id=session_id)
        assert len(rows) == 1 and rows[0].status == NonceStatus.CONSUMED and rows[0].sealed is None
        assert rows[0].package_digest == session.package_digest and (rows[0].hiding, rows[0].binding) == (package["commitments"][0]["hiding"], package["commitments"][0]["binding"])
        assert rows[0].signature_share == SigningPlayer.objects.get(session=session, player_code="BACKEND_A").signature_share
        assert share_verifies(session.key.public_key_package, package, 1, rows[0].signature_share)
        # The signature's R is the group commitment of the nonces committed before the crashes.
        parsed = M.from_json(package)
        factors = frost.compute_binding_factors(parsed.group_public_key, list(parsed.commitments), parsed.message)
        signature = bytes(Signature.from_string(session.signature))
        assert signature[:32] == frost.compute_group_commitment(list(parsed.commitments), factors)
    finally:
        worker.stop()
        route_tasks_to(celery_worker_process.queue)
