"""Threshold signing cost: FROST(Ed25519, SHA-512) 2-of-3 against plain Ed25519.

All players in this process, one core, on the message of a Solana token transfer (what a
DKG account signs):
1. frost_sign_2_of_3 — a whole signature: two commitments (round one), the signing package,
   two signature shares (round two), every share verified, aggregation and the RFC's final
   verification. Signatures/s and p50/p99 per signature, with the p50 of each step.
2. ed25519_sign — the same message signed by one key (solders ``Keypair``, as custody
   signs today, and libsodium through PyNaCl); ``added_latency_us`` is FROST's p50 minus
   solders'. Network round trips between players are not included: in the service they
   are the API calls of a signing session (phase B).
3. frost_dkg_2_of_3 / frost_refresh_2_of_3 — key generation and a share refresh, all
   players in process.
4. frost_player_cli — the external player's two commands for one signature (commit, sign)
   as subprocesses with the default scrypt cost: what a client pays per signature.
5. frost_api_per_transaction — a 2-of-3 DKG account (two backend players, one external)
   signing a transaction through the API, in a process of its own on a throwaway SQLite
   database (Django's test client, the worker's steps run inline): open the session, the
   backend player's commit, the external commitment, the backend share, the external share
   with Sign Transaction (verified, aggregated, added) — against Sign Transaction with one
   ordinary signature. ``added_latency_ms`` is the difference of the p50s: the service's own
   work per transaction. Network reads (the lifetime check, the same in both) and the
   broker's two hops to the worker (~0.1 s each on the embedded broker's polling) are not in it.
Prints one JSON line per measurement.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from nacl.signing import SigningKey  # noqa: E402
from solders.hash import Hash  # noqa: E402
from solders.keypair import Keypair  # noqa: E402
from solders.message import Message  # noqa: E402
from solders.pubkey import Pubkey  # noqa: E402
from spl.token.constants import TOKEN_PROGRAM_ID  # noqa: E402
from spl.token.instructions import TransferCheckedParams, transfer_checked  # noqa: E402

from threshold import dkg, frost  # noqa: E402
from threshold import messages as M  # noqa: E402
from threshold import signing as S  # noqa: E402

SIGNATURES = int(os.environ.get("BENCH_FROST_SIGNATURES", "400"))
CLI_RUNS = int(os.environ.get("BENCH_FROST_CLI_RUNS", "5"))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def us(seconds: float) -> float:
    return round(seconds * 1e6, 1)


def keygen(participants=(1, 2, 3), threshold=2, session="bench"):
    first = {i: dkg.round1(session_id=session, identifier=i, threshold=threshold, participants=list(participants)) for i in participants}
    states, shares = {}, []
    for i in participants:
        states[i], out = dkg.round2(first[i], [s.package for s in first.values()])
        shares.extend(out)
    return {i: dkg.finish(states[i], shares) for i in participants}


def refresh(keys: dict, session="bench-refresh"):
    first = {i: dkg.refresh_round1(session_id=session, key_package=k, participants=sorted(keys)) for i, k in keys.items()}
    states, shares = {}, []
    for i in keys:
        states[i], out = dkg.round2(first[i], [s.package for s in first.values()])
        shares.extend(out)
    return {i: dkg.refresh_finish(states[i], shares, keys[i]) for i in keys}


def transfer_message(owner: Pubkey) -> bytes:
    mint, source, dest = (Keypair().pubkey() for _ in range(3))
    ix = transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint, dest=dest, owner=owner, amount=1_000_000, decimals=6))
    return bytes(Message.new_with_blockhash([ix], owner, Hash.new_unique()))


def frost_signatures(keys: dict, message: bytes, signers=(1, 2)) -> dict:
    public = keys[signers[0]].public
    totals, steps = [], {"commit": [], "sign": [], "aggregate": []}
    cpu_start = time.process_time()
    for n in range(SIGNATURES):
        session = f"s{n}"
        t0 = time.perf_counter()
        nonces = {i: S.commit(keys[i], session) for i in signers}
        t1 = time.perf_counter()
        package = S.signing_package(session, public, message, [S.SigningCommitment(session, x.nonces.commitment) for x in nonces.values()])
        shares = [S.sign(keys[i], nonces[i], package) for i in signers]
        t2 = time.perf_counter()
        signature = S.aggregate(public, package, shares).signature
        t3 = time.perf_counter()
        assert len(signature) == 64
        totals.append(t3 - t0)
        steps["commit"].append((t1 - t0) / len(signers))
        steps["sign"].append((t2 - t1) / len(signers))
        steps["aggregate"].append(t3 - t2)
    cpu = time.process_time() - cpu_start
    # CPU time is the figure that holds on a shared machine; wall time includes preemption.
    return {"signatures": SIGNATURES, "signatures_per_cpu_s": round(SIGNATURES / cpu, 1), "cpu_us_per_signature": us(cpu / SIGNATURES),
            "signatures_per_s": round(len(totals) / sum(totals), 1),
            "p50_us": us(pct(totals, 0.5)), "p99_us": us(pct(totals, 0.99)),
            "commit_per_player_p50_us": us(pct(steps["commit"], 0.5)), "sign_per_player_p50_us": us(pct(steps["sign"], 0.5)),
            "verify_shares_and_aggregate_p50_us": us(pct(steps["aggregate"], 0.5))}


def plain_signatures(message: bytes) -> dict:
    keypair, nacl_key = Keypair(), SigningKey.generate()
    solders_times, nacl_times = [], []
    cpu_start = time.process_time()
    for _ in range(SIGNATURES):
        t0 = time.perf_counter()
        keypair.sign_message(message)
        t1 = time.perf_counter()
        nacl_key.sign(message)
        t2 = time.perf_counter()
        solders_times.append(t1 - t0)
        nacl_times.append(t2 - t1)
    cpu = time.process_time() - cpu_start
    return {"cpu_us_per_signature_both": us(cpu / SIGNATURES), "solders_p50_us": us(pct(solders_times, 0.5)), "pynacl_p50_us": us(pct(nacl_times, 0.5)),
            "solders_signatures_per_s": round(len(solders_times) / sum(solders_times), 1)}


def timed(func, runs: int = 20) -> dict:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    return {"runs": runs, "p50_ms": round(pct(times, 0.5) * 1e3, 2), "p99_ms": round(pct(times, 0.99) * 1e3, 2)}


def cli_round_trip(keys: dict, message: bytes) -> dict:
    """Commit + sign through the CLI for player 3 (store created with the default cost)."""
    with tempfile.TemporaryDirectory(prefix="bench-frost-") as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "FROST_PLAYER_PASSPHRASE": "bench"}

        def run(*args) -> dict:
            out = subprocess.run([sys.executable, "-m", "threshold.player", "--store", str(tmp / "store"), *map(str, args)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            return json.loads(out)

        run("init")
        from threshold.player import Store

        store = Store.open(tmp / "store", "bench")
        store.put("keys", "bench", M.to_json(keys[3]))
        public = keys[3].public
        commit_times, sign_times = [], []
        for n in range(CLI_RUNS):
            session = f"cli-{n}"
            t0 = time.perf_counter()
            commitment = run("commit", "--key", "bench", "--session", session)
            t1 = time.perf_counter()
            own = S.commit(keys[1], session)
            package = S.signing_package(session, public, message, [M.from_json(commitment), S.SigningCommitment(session, own.nonces.commitment)])
            (tmp / "package.json").write_text(json.dumps(M.to_json(package)))
            t2 = time.perf_counter()
            share = M.from_json(run("sign", "--key", "bench", tmp / "package.json"))
            t3 = time.perf_counter()
            S.aggregate(public, package, [share, S.sign(keys[1], own, package)])
            commit_times.append(t1 - t0)
            sign_times.append(t3 - t2)
        return {"runs": CLI_RUNS, "commit_p50_ms": round(statistics.median(commit_times) * 1e3, 1),
                "sign_p50_ms": round(statistics.median(sign_times) * 1e3, 1), "scrypt_log_n": 15,
                "note": "each command is a new Python process that derives the store key (scrypt) once"}


API_RUNS = int(os.environ.get("BENCH_FROST_API_RUNS", "30"))


def api_per_transaction() -> dict:
    """Run ``api_mode`` in a fresh process with its own var dir and database."""
    with tempfile.TemporaryDirectory(prefix="bench-frost-api-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env.update({"LEDGER_VAR_DIR": tmp, "LEDGER_EMBEDDED": "1", "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings"})
        out = subprocess.run([sys.executable, __file__, "--api"], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])


def api_mode() -> None:  # pragma: no cover - benchmark
    import uuid

    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from accounts.mpc import keygen as mpc_keygen, sessions
    from accounts.mpc.models import DkgSession, SigningSession
    from tenancy import services as tenancy
    from transactions import signatures
    from transactions.models import Transaction

    signatures.lifetime_check = lambda tx: None  # one network read, the same in both flows: not measured
    tenant = tenancy.tenant_create(external_id="BENCH", name="Bench")
    secret = tenancy.api_key_create(organization=tenant, rate_limit_per_minute=1_000_000).secret
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def call(method, path, item):
        response = getattr(client, method)(f"/api/v1/{path}", json.dumps({"itemData": item}), content_type="application/json")
        assert response.status_code in (200, 201), response.content[:500]
        return response.json()

    entry = {"keyUsage": "BENCH", "useBackendPlayersCodes": ["BACKEND_A", "BACKEND_B"], "session": {"threshold": 2, "externalPlayers": [{"mpcPlayerCode": "X"}]}}
    created = call("post", "accounts", {"offchainReferences": {"type": "WALLET"}, "privateKeyDetails": {"dkgKeys": [entry]}})
    sid = created["dkgSession"]["sessionId"]
    step = lambda: mpc_keygen.keygen_advance(session_pk=DkgSession.unscoped.get(offchain_id=sid).pk)  # noqa: E731
    step()
    r1 = dkg.round1(session_id=sid, identifier=3, threshold=2, participants=[1, 2, 3])
    call("post", "accounts/dkg/round1", {"sessionId": sid, "mpcPlayerCode": "X", "package": M.to_json(r1.package)})
    step()
    state, out = dkg.round2(r1, [M.from_json(m) for m in call("post", "accounts/dkg/status", {"sessionId": sid})["round1Packages"]])
    call("post", "accounts/dkg/round2", {"sessionId": sid, "mpcPlayerCode": "X", "packages": [M.to_json(p) for p in out]})
    step()
    key = dkg.finish(state, [M.from_json(m) for m in call("post", "accounts/dkg/status", {"sessionId": sid})["round2Packages"]])
    call("post", "accounts/dkg/finish", {"sessionId": sid, "mpcPlayerCode": "X", "publicKeyPackage": M.to_json(key.public)})
    step()
    address = call("post", "accounts/dkg/status", {"sessionId": sid})["account"]["onchainId"]
    plain = Keypair()

    def held(signer: str) -> Transaction:
        message = transfer_message(Pubkey.from_string(signer))
        return Transaction.objects.for_tenant(tenant).create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="bench", message=message, blockhash=str(uuid.uuid4()),
                                                             fee_payer=signer, required_signers=[signer], status="PARTIALLY_SIGNED", submit_when_signed=False)

    dkg_times, plain_times, parts = [], [], {"open": [], "commits": [], "sign_transaction": []}
    for _ in range(API_RUNS):
        tx = held(address)
        t0 = time.perf_counter()
        opened = call("post", "transactions/dkg/open", {"transaction": {"offchainId": str(tx.offchain_id)}, "account": {"onchainId": address}, "mpcPlayerCodes": ["BACKEND_A", "X"]})
        session_pk = SigningSession.unscoped.get(offchain_id=opened["sessionId"]).pk
        sessions.signing_advance(session_pk=session_pk)  # the worker: BACKEND_A commits
        t1 = time.perf_counter()
        nonces = S.commit(key, opened["sessionId"])
        state = call("post", "transactions/dkg/commit", {"sessionId": opened["sessionId"], "mpcPlayerCode": "X", "commitment": M.to_json(S.SigningCommitment(opened["sessionId"], nonces.nonces.commitment))})
        sessions.signing_advance(session_pk=session_pk)  # the worker: BACKEND_A signs
        t2 = time.perf_counter()
        share = S.sign(key, nonces, M.from_json(state["signingPackage"])).share.hex()
        signed = call("patch", "transactions/sign", {"transaction": {"offchainId": str(tx.offchain_id)}, "submitTxnIfAllSignaturesCollected": False, "offPlatformSigning": [
            {"account": {"onchainId": address}, "dkgSigning": {"sessionId": opened["sessionId"], "partialSignatures": [{"mpcPlayerCode": "X", "partialSignature": share}]}}]})
        t3 = time.perf_counter()
        assert signed["status"] == "SIGNED", signed
        dkg_times.append(t3 - t0)
        parts["open"].append(t1 - t0)
        parts["commits"].append(t2 - t1)
        parts["sign_transaction"].append(t3 - t2)
        tx = held(str(plain.pubkey()))
        t0 = time.perf_counter()
        signature = str(plain.sign_message(bytes(tx.message)))
        signed = call("patch", "transactions/sign", {"transaction": {"offchainId": str(tx.offchain_id)}, "submitTxnIfAllSignaturesCollected": False,
                                                     "offPlatformSigning": [{"account": {"onchainId": str(plain.pubkey()), "offPlatform": True}, "signature": signature}]})
        plain_times.append(time.perf_counter() - t0)
        assert signed["status"] == "SIGNED", signed
    print(json.dumps({"runs": API_RUNS, "database": "sqlite", "dkg_p50_ms": round(pct(dkg_times, 0.5) * 1e3, 2), "dkg_p99_ms": round(pct(dkg_times, 0.99) * 1e3, 2),
                      "plain_sign_transaction_p50_ms": round(pct(plain_times, 0.5) * 1e3, 2),
                      "added_latency_ms": round((pct(dkg_times, 0.5) - pct(plain_times, 0.5)) * 1e3, 2),
                      **{f"{name}_p50_ms": round(pct(values, 0.5) * 1e3, 2) for name, values in parts.items()}}))


def main() -> None:
    if "--api" in sys.argv:
        api_mode()
        return
    keys = keygen()
    group = Pubkey.from_bytes(keys[1].group_public_key)
    message = transfer_message(group)
    common = {"message_bytes": len(message), "cpu": "1 core, all players in process"}
    frost_result = frost_signatures(keys, message)
    plain = plain_signatures(message)
    print(json.dumps({"bench": "frost_sign_2_of_3", **common, **frost_result,
                      "added_latency_us": round(frost_result["p50_us"] - plain["solders_p50_us"], 1),
                      "added_cpu_us": round(frost_result["cpu_us_per_signature"] - plain["solders_p50_us"], 1)}), flush=True)
    print(json.dumps({"bench": "ed25519_sign", **common, "signatures": SIGNATURES, **plain}), flush=True)
    print(json.dumps({"bench": "frost_dkg_2_of_3", **timed(keygen)}), flush=True)
    print(json.dumps({"bench": "frost_refresh_2_of_3", **timed(lambda: refresh(keys))}), flush=True)
    print(json.dumps({"bench": "frost_player_cli", **cli_round_trip(keys, message)}), flush=True)
    print(json.dumps({"bench": "frost_api_per_transaction", **api_per_transaction()}), flush=True)
    assert frost.verify(message, S.aggregate(keys[1].public, *_one(keys, message)).signature, bytes(group))


def _one(keys, message):
    nonces = {i: S.commit(keys[i], "final") for i in (2, 3)}
    package = S.signing_package("final", keys[2].public, message, [S.SigningCommitment("final", n.nonces.commitment) for n in nonces.values()])
    return package, [S.sign(keys[i], nonces[i], package) for i in (2, 3)]


if __name__ == "__main__":
    main()
