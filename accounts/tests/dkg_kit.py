"""Helpers of the threshold-key API tests: Create Account with dkgKeys, the DKG rounds of an
external player spoken through the API (in this process, on the same JSON as the CLI), and
the backend players' steps run as the worker runs them."""

from __future__ import annotations

from accounts.mpc import keygen, sessions
from accounts.mpc.models import DkgSession, SigningSession
from threshold.tests.threshold_kit import InProcessPlayer
from threshold import messages as M
from threshold import signing as S

ACCOUNTS = "/api/v1/accounts"
DKG = "/api/v1/accounts/dkg"
SIGNING = "/api/v1/transactions/dkg"


def dkg_item(backend=("BACKEND_A", "BACKEND_B"), external=(), threshold=2, *, code=None, **extra) -> dict:
    entry = {"keyUsage": "TRANSACTION_SIGNING", "useBackendPlayersCodes": list(backend), "isDefault": True,
             "session": {"threshold": threshold, "externalPlayers": [p if isinstance(p, dict) else {"mpcPlayerCode": p} for p in external]}}
    item = {"offchainReferences": {"type": "WALLET", **({"code": code} if code else {})}, "privateKeyDetails": {"dkgKeys": [entry]}}
    return {**item, **extra}


def create(api, item: dict, **kwargs):
    return api.call("post", ACCOUNTS, {"itemData": item}, **kwargs)


def dkg_status(api, session_id: str) -> dict:
    response = api.call("post", f"{DKG}/status", {"itemData": {"sessionId": session_id}})
    assert response.status_code == 200, response.json()
    return response.json()


def advance(session_id: str) -> str:
    """The worker's step (the tests without a worker process run it here)."""
    return keygen.keygen_advance(session_pk=DkgSession.unscoped.get(offchain_id=session_id).pk)


def backend_done(session_id: str, timeout: float = 30.0) -> None:
    """Wait until the worker did the backend players' part of the session's current round."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        session = DkgSession.unscoped.get(offchain_id=session_id)
        players = list(session.players.all())
        pending = {
            "ROUND1": any(p.backend and p.round1 is None for p in players) or all(p.round1 is not None for p in players),
            "ROUND2": any(p.backend and p.round2 is None for p in players) or all(p.round2 is not None for p in players),
            "FINISHING": any(p.backend and not p.finished for p in players) or all(p.finished for p in players),
        }.get(session.status, False)
        if not pending:
            return
        time.sleep(0.05)
    raise AssertionError(f"the worker did not do the backend players' part of {session_id} in {timeout}s (status {session.status})")


def advance_signing(session_id: str) -> str:
    return sessions.signing_advance(session_pk=SigningSession.unscoped.get(offchain_id=session_id).pk)


class ApiPlayer(InProcessPlayer):
    """An external player in this process, speaking through the API as ``code``."""

    def __init__(self, identifier: int, code: str, api):
        super().__init__(identifier)
        self.code, self.api = code, api

    def send(self, path: str, **item):
        return self.api.call("post", f"{DKG}/{path}", {"itemData": {"mpcPlayerCode": self.code, **item}})

    def run_dkg(self, session_id: str, *, step=None) -> dict:
        """Round 1, 2 and finish, with ``step()`` (the worker) between them."""
        step = step or (lambda: advance(session_id))
        status = dkg_status(self.api, session_id)
        participants = [p["identifier"] for p in status["players"]]
        sent = self.send("round1", sessionId=session_id, package=self.dkg_round1(session_id, status["threshold"], participants))
        assert sent.status_code == 200, sent.json()
        step()
        round1 = dkg_status(self.api, session_id)["round1Packages"]
        sent = self.send("round2", sessionId=session_id, packages=self.dkg_round2(round1))
        assert sent.status_code == 200, sent.json()
        step()
        round2 = dkg_status(self.api, session_id)["round2Packages"]
        sent = self.send("finish", sessionId=session_id, publicKeyPackage=self.dkg_finish(round2))
        assert sent.status_code == 200, sent.json()
        step()
        return dkg_status(self.api, session_id)

    def commit_to(self, session_id: str) -> dict:
        response = self.api.call("post", f"{SIGNING}/commit", {"itemData": {"sessionId": session_id, "mpcPlayerCode": self.code, "commitment": self.commit(session_id)}})
        assert response.status_code == 200, response.json()
        return response.json()

    def share_for(self, package: dict) -> str:
        return self.sign(package)["signatureShare"]


def dkg_account(api, external_players: list[ApiPlayer] = (), backend=("BACKEND_A", "BACKEND_B"), threshold=2, *, step=None, **extra) -> dict:
    """A DKG account, created and completed; returns the final session."""
    response = create(api, dkg_item(backend, [p.code for p in external_players], threshold, **extra))
    assert response.status_code == 201, response.json()
    session = response.json()["dkgSession"]
    if not external_players:
        return session
    step = step or (lambda: advance(session["sessionId"]))
    step()
    for player in external_players:  # one external player drives the rounds; the others follow the same status
        assert len(external_players) == 1, "the kit drives one external player"
        return player.run_dkg(session["sessionId"], step=step)
    return session


def share_verifies(public_json: dict, package_json: dict, identifier: int, share_hex: str) -> bool:
    public, package = M.from_json(public_json), M.from_json(package_json)
    return S.verify_share(public, package, S.SignatureShare(package.session_id, identifier, bytes.fromhex(share_hex)))
