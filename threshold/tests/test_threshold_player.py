"""The external player's CLI end to end, each command in its own process without Django:
key generation, signing, blame, the encrypted store, nonces used once (also across kill -9
and concurrent runs), and refresh."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from solders.pubkey import Pubkey
from solders.signature import Signature

from threshold.tests.threshold_kit import PASSPHRASE, ROOT, CliError, Player, client_env, parse_result, write
from threshold.player import Store

MESSAGE = b"a message for two of three"


def _dkg(tmp: Path, env: dict, participants=(1, 2, 3), threshold=2, session="keygen-1", key="acct") -> dict[int, Player]:
    players = {i: Player(tmp / f"store-{i}", env) for i in participants}
    for player in players.values():
        player("init", "--scrypt-log-n", 14)
    ids = ",".join(map(str, participants))
    round1 = [write(tmp / f"r1-{i}.json", p("dkg-round1", "--session", session, "--identifier", i, "--threshold", threshold, "--participants", ids))
              for i, p in players.items()]
    round2 = [write(tmp / f"r2-{i}.json", p("dkg-round2", "--session", session, *round1)) for i, p in players.items()]
    publics = [p("dkg-finish", "--session", session, "--key", key, *round2) for p in players.values()]
    assert all(public == publics[0] for public in publics)
    write(tmp / "public.json", publics[0])
    return players


def _sign(tmp: Path, players: dict[int, Player], signers, session: str, message: bytes = MESSAGE, key="acct"):
    commitments = [write(tmp / f"c-{session}-{i}.json", players[i]("commit", "--key", key, "--session", session)) for i in signers]
    coordinator = players[signers[0]]
    package = write(tmp / f"pkg-{session}.json", coordinator("package", "--public-key-package", tmp / "public.json", "--session", session,
                                                             "--message-base64", base64.b64encode(message).decode(), *commitments))
    shares = [write(tmp / f"z-{session}-{i}.json", players[i]("sign", "--key", key, package)) for i in signers]
    return package, shares


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """Three stores after one 2-of-3 key generation (copied per test)."""
    tmp = tmp_path_factory.mktemp("frost-player")
    env = client_env(tmp)
    _dkg(tmp, env)
    return tmp, env


@pytest.fixture
def players(keyed, tmp_path):
    source, env = keyed
    for item in source.iterdir():
        if item.name.startswith("store-"):
            shutil.copytree(item, tmp_path / item.name)
        elif item.name == "public.json":
            shutil.copy(item, tmp_path / item.name)
    return tmp_path, {i: Player(tmp_path / f"store-{i}", env) for i in (1, 2, 3)}


def test_the_cli_needs_no_django(tmp_path):
    env = client_env(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import django"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "must not import Django" in probe.stderr
    helped = subprocess.run([sys.executable, "-m", "threshold.player", "--help"], env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "dkg-round1" in helped.stdout


def test_key_generation_and_any_two_of_three_sign(players):
    tmp, p = players
    public = json.loads((tmp / "public.json").read_text())
    listed = p[2]("keys")
    assert [(k["key"], k["identifier"], k["threshold"], k["address"]) for k in listed] == [("acct", 2, 2, public["address"])]
    assert p[3]("public-key", "acct") == public
    assert p[3]("--out", tmp / "written.json", "public-key", "acct") is None
    assert json.loads((tmp / "written.json").read_text()) == public
    group = Pubkey.from_string(public["address"])
    for signers in ([1, 3], [2, 3], [1, 2]):
        session = "tx-" + "".join(map(str, signers))
        package, shares = _sign(tmp, p, signers, session)
        signature = p[1]("aggregate", "--public-key-package", tmp / "public.json", "--package", package, *shares)
        assert signature["groupPublicKey"] == public["groupPublicKey"]
        assert Signature.from_string(signature["signatureBase58"]).verify(group, MESSAGE)


def test_one_player_cannot_sign(players):
    tmp, p = players
    commitment = write(tmp / "alone.json", p[1]("commit", "--key", "acct", "--session", "alone"))
    with pytest.raises(CliError) as caught:
        p[1]("package", "--public-key-package", tmp / "public.json", "--session", "alone", "--message-base64", "bWU=", commitment)
    assert caught.value.error["error"] == "INVALID_INPUT" and "needs 2 participants" in caught.value.error["message"]


def test_a_wrong_signature_share_is_refused_and_blamed(players):
    tmp, p = players
    package, shares = _sign(tmp, p, [1, 3], "blamed")
    forged = json.loads(shares[1].read_text())
    forged["signatureShare"] = json.loads(shares[0].read_text())["signatureShare"]
    write(shares[1], forged)
    with pytest.raises(CliError) as caught:
        p[1]("aggregate", "--public-key-package", tmp / "public.json", "--package", package, *shares)
    assert caught.value.error["error"] == "INVALID_SIGNATURE_SHARE" and caught.value.error["culprits"] == [3]


def test_nonces_sign_one_package_only(players):
    tmp, p = players
    package, shares = _sign(tmp, p, [1, 2], "once")
    # The same package again (a retry after a lost answer, here on standard input) gets the same share.
    assert p[1]("sign", "--key", "acct", "-", stdin=package.read_text()) == json.loads(shares[0].read_text())
    other = json.loads(package.read_text()) | {"message": base64.b64encode(b"something else").decode()}
    with pytest.raises(CliError) as caught:
        p[1]("sign", "--key", "acct", write(tmp / "other.json", other))
    assert caught.value.error["error"] == "NONCE_ALREADY_USED"
    with pytest.raises(CliError) as caught:
        p[2]("commit", "--key", "acct", "--session", "once")
    assert caught.value.error["error"] == "NONCE_ALREADY_USED"
    with pytest.raises(CliError) as caught:
        p[3]("sign", "--key", "acct", package)  # 3 never committed in this session
    assert caught.value.error["error"] == "STORE_ERROR"


def test_the_store_is_encrypted_and_bound_to_its_passphrase(players):
    tmp, p = players
    store = Store.open(tmp / "store-1", PASSPHRASE)
    share_hex = store.get("keys", "acct")["signingShare"]
    p[1]("commit", "--key", "acct", "--session", "sealed")
    for path in (tmp / "store-1").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert share_hex.encode() not in data and bytes.fromhex(share_hex) not in data, path
            assert path.stat().st_mode & 0o077 == 0, path
        else:
            assert path.stat().st_mode & 0o077 == 0, path
    with pytest.raises(CliError) as caught:
        p[1]("keys", env_extra={"FROST_PLAYER_PASSPHRASE": "wrong"})
    assert caught.value.error["error"] == "WRONG_PASSPHRASE"
    # A record copied under another name does not open (its name is authenticated).
    shutil.copy(tmp / "store-1" / "keys" / "acct.json", tmp / "store-1" / "keys" / "copy.json")
    with pytest.raises(CliError) as caught:
        p[1]("public-key", "copy")
    assert caught.value.error["error"] == "STORE_ERROR" and "altered or moved" in caught.value.error["message"]
    passfile = tmp / "pass.txt"
    passfile.write_text(PASSPHRASE + "\n")
    assert p[1]("--passphrase-file", passfile, "public-key", "acct", env_extra={"FROST_PLAYER_PASSPHRASE": "wrong"})["threshold"] == 2


def test_a_signer_killed_before_it_consumes_leaves_the_nonce_usable_once(players):
    tmp, p = players
    commitments = [write(tmp / f"k-{i}.json", p[i]("commit", "--key", "acct", "--session", "killed")) for i in (1, 2)]
    package = write(tmp / "pkg-killed.json", p[1]("package", "--public-key-package", tmp / "public.json", "--session", "killed",
                                                  "--message-base64", "a2lsbA==", *commitments))
    other = write(tmp / "pkg-other.json", json.loads(package.read_text()) | {"message": base64.b64encode(b"other").decode()})
    store = Store.open(tmp / "store-1", PASSPHRASE)
    with store.lock():
        victim = p[1].popen("sign", "--key", "acct", package)
        _wait_blocked_on_lock(victim)
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=30)
        # Two signers race for the same nonces with different packages: exactly one wins.
        racers = [p[1].popen("sign", "--key", "acct", pkg) for pkg in (package, other)]
        for racer in racers:
            _wait_blocked_on_lock(racer)
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        try:
            outcomes.append(("share", parse_result(racer.returncode, out, err)))
        except CliError as exc:
            outcomes.append(("refused", exc.error["error"]))
    assert sorted(kind for kind, _ in outcomes) == ["refused", "share"]
    assert [value for kind, value in outcomes if kind == "refused"] == ["NONCE_ALREADY_USED"]


def _wait_blocked_on_lock(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Until ``proc`` has opened the store's lock file (after its imports and key
    derivation; its next step is to wait for the lock this test holds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(os.readlink(f"/proc/{proc.pid}/fd/{fd}").endswith("/.lock") for fd in os.listdir(f"/proc/{proc.pid}/fd")):
                return
        except OSError:
            pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the signer never reached the store lock")


def test_a_tampered_key_generation_share_is_blamed_and_complaints_decide(tmp_path):
    env = client_env(tmp_path)
    players = {i: Player(tmp_path / f"store-{i}", env) for i in (1, 2, 3)}
    for player in players.values():
        player("init", "--scrypt-log-n", 14)
    round1 = [write(tmp_path / f"r1-{i}.json", p("dkg-round1", "--session", "k", "--identifier", i, "--threshold", 2, "--participants", "1,2,3"))
              for i, p in players.items()]
    round2 = {i: p("dkg-round2", "--session", "k", *round1) for i, p in players.items()}
    to_one = next(m for m in round2[2] if m["recipient"] == 1)
    raw = bytearray(base64.b64decode(to_one["encryptedShare"]))
    raw[-1] ^= 1
    to_one["encryptedShare"] = base64.b64encode(bytes(raw)).decode()
    files = [write(tmp_path / f"r2-{i}.json", msgs) for i, msgs in round2.items()]
    with pytest.raises(CliError) as caught:
        players[1]("dkg-finish", "--session", "k", "--key", "acct", *files)
    assert caught.value.error["error"] == "DKG_ABORTED" and caught.value.error["culprit"] == 2
    complaint = write(tmp_path / "complaint.json", players[1]("complain", "--session", "k", write(tmp_path / "bad.json", to_one)))
    assert players[3]("complaint-check", "--complaint", complaint, *round1)["culprit"] == 2
    honest = next(m for m in round2[3] if m["recipient"] == 1)
    false_claim = write(tmp_path / "false.json", players[1]("complain", "--session", "k", write(tmp_path / "honest.json", honest)))
    assert players[3]("complaint-check", "--complaint", false_claim, *round1)["culprit"] == 1
    # Participants 2 and 3 were not hurt; 1 abandons the session.
    assert players[1]("abandon", "--session", "k")["abandoned"]
    with pytest.raises(CliError):
        players[1]("dkg-finish", "--session", "k", "--key", "acct", *files)


def test_refresh_keeps_the_address_and_retires_old_shares(players):
    tmp, p = players
    before = json.loads((tmp / "public.json").read_text())
    shutil.copytree(tmp / "store-1", tmp / "store-1-old")
    old_one = Player(tmp / "store-1-old", p[1].env)
    round1 = [write(tmp / f"rr1-{i}.json", p[i]("refresh-round1", "--key", "acct", "--session", "refresh-1", "--participants", "1,2,3")) for i in p]
    round2 = [write(tmp / f"rr2-{i}.json", p[i]("refresh-round2", "--session", "refresh-1", *round1)) for i in p]
    after = [p[i]("refresh-finish", "--session", "refresh-1", "--key", "acct", *round2) for i in p]
    assert all(a == after[0] for a in after)
    assert after[0]["address"] == before["address"] and after[0]["verifyingShares"] != before["verifyingShares"]
    write(tmp / "public.json", after[0])
    package, shares = _sign(tmp, p, [1, 3], "after-refresh")
    signature = p[1]("aggregate", "--public-key-package", tmp / "public.json", "--package", package, *shares)
    assert Signature.from_string(signature["signatureBase58"]).verify(Pubkey.from_string(before["address"]), MESSAGE)
    # The old copy of player 1's share no longer combines with player 2's new one.
    mixed = {1: old_one, 2: p[2]}
    package, shares = _sign(tmp, mixed, [1, 2], "mixed")
    with pytest.raises(CliError) as caught:
        p[2]("aggregate", "--public-key-package", tmp / "public.json", "--package", package, *shares)
    assert caught.value.error["culprits"] == [1]


def test_the_player_installs_with_pip_from_its_folder_alone(tmp_path):
    """``pip install ./threshold`` (docs/threshold-signing.md): a fresh virtualenv with no
    Django and no checkout on its path gets the library and the ``ledger-threshold-player``
    command, and the command keeps an encrypted store."""
    source = tmp_path / "src" / "threshold"
    shutil.copytree(ROOT / "threshold", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LEDGER_", "PYTHONPATH", "VIRTUAL_ENV"))}
    installed = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "-q", str(source)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    probe = subprocess.run([venv / "bin" / "python", "-c", "import importlib.util, threshold.player; print(threshold.player.__file__); "
                            "print(importlib.util.find_spec('django') is None)"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    where, no_django = probe.stdout.split()
    assert where.startswith(str(venv)) and no_django == "True", probe.stdout + probe.stderr
    store = tmp_path / "store"
    player = [venv / "bin" / "ledger-threshold-player", "--store", str(store)]
    env["FROST_PLAYER_PASSPHRASE"] = PASSPHRASE
    assert subprocess.run([*player, "init", "--scrypt-log-n", "14"], cwd=tmp_path, env=env, capture_output=True, timeout=60).returncode == 0
    keys = subprocess.run([*player, "keys"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert keys.returncode == 0 and json.loads(keys.stdout) == [], keys.stderr
