"""The external player over the service's API (docs/threshold-signing.md, "The external
player"): an HTTP client with only the standard library, and the two flows a client runs —
a key generation (or refresh) session, and a signing session — on the store's operations.

Each flow reads the session's state from the API and does what is left, so running it
again after a crash (or a lost answer) resumes: the store remembers what this player sent
(round-1 state, the key once finished, nonces and their one use), the API what it
received. Requests carry an x-request-id and are retried with the same id (the API
replays an answer it already gave).
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Callable

from .. import dkg, messages as M
from . import operations as ops
from . import solana_message
from .store import Store, StoreError


class ApiError(Exception):
    """The API answered an error (``status``, its ``errors`` list)."""

    def __init__(self, status: int, errors: list):
        self.status, self.errors = status, errors
        first = errors[0] if errors else {}
        super().__init__(f"HTTP {status} {first.get('code', '')}: {first.get('message', '')}")


class SessionFailed(Exception):
    """The session ended without this player's part being needed any more."""

    def __init__(self, message: str, culprit: str | None = None):
        self.culprit = culprit
        super().__init__(message)


class Api:
    """``Authorization: Bearer <key>`` JSON calls to ``base_url`` + /api/v1/..."""

    def __init__(self, base_url: str, api_key: str, *, cluster: str | None = None, timeout: float = 30.0, attempts: int = 5):
        if not base_url or not api_key:
            raise StoreError("the API needs --api-url and an API key (--api-key-file, FROST_PLAYER_API_KEY)")
        self.base_url, self.api_key, self.cluster, self.timeout, self.attempts = base_url.rstrip("/"), api_key, cluster, timeout, attempts

    def call(self, method: str, path: str, item: dict) -> dict:
        url = f"{self.base_url}/api/v1/{path}" + (f"?svmCluster={self.cluster}" if self.cluster else "")
        body = json.dumps({"itemData": item}).encode()
        headers = {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json", "Accept": "application/json",
                   "x-request-id": str(uuid.uuid4())}
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(url, data=body, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as exc:
                payload = exc.read()
                retry = exc.code >= 500 or exc.code == 429
                if not retry or attempt == self.attempts:
                    try:
                        errors = json.loads(payload).get("errors") or []
                    except ValueError:
                        errors = [{"code": "HTTP_ERROR", "message": payload[:200].decode(errors="replace")}]
                    raise ApiError(exc.code, errors) from None
            except (urllib.error.URLError, OSError) as exc:
                if attempt == self.attempts:
                    raise StoreError(f"the API at {self.base_url} does not answer ({exc})") from None
            time.sleep(min(0.25 * 2 ** attempt, 3.0))  # the same x-request-id: a retry is replayed, never run twice
        raise AssertionError("unreachable")


class WaitTimedOut(Exception):
    """The session did not reach the next step within ``--timeout``: nothing is wrong with
    the store, and running the command again resumes (exit code TIMED_OUT)."""


def _wait(fetch: Callable[[], dict], ready: Callable[[dict], bool], *, timeout: float, poll: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = fetch()
        if state.get("status") == "FAILED" or state.get("status") in ("CANCELLED", "EXPIRED"):
            raise SessionFailed(f"the session is {state['status']}: {state.get('errorMessage') or ''}", state.get("culprit"))
        if ready(state):
            return state
        if time.monotonic() > deadline:
            raise WaitTimedOut(f"timed out after {timeout:g} s waiting for {what}; run the command again to resume")
        time.sleep(poll)


def _me(state: dict, code: str) -> dict:
    me = next((p for p in state["players"] if p["mpcPlayerCode"] == code), None)
    if me is None:
        raise StoreError(f"{code} is not a player of session {state['sessionId']}")
    if me["backend"]:
        raise StoreError(f"{code} is a backend player of the service, not an external one")
    return me


# --- key generation and refresh -------------------------------------------------------------------


def keygen(store: Store, api: Api, *, session_id: str, code: str, key_name: str, timeout: float = 600, poll: float = 0.5, log=lambda text: None) -> dict:
    """Take part as ``code`` in key generation (or refresh) ``session_id`` until it completes;
    the key is stored as ``key_name``. Returns {sessionId, status, account, address, key}."""
    fetch = lambda: api.call("POST", "accounts/dkg/status", {"sessionId": session_id})  # noqa: E731
    state = fetch()
    me, kind = _me(state, code), state["kind"]
    identifiers = [p["identifier"] for p in state["players"]]
    if state["status"] in ("FAILED", "COMPLETED"):
        if state["status"] == "FAILED":
            raise SessionFailed(f"the session is FAILED: {state.get('errorMessage')}", state.get("culprit"))
        return _done(state, key_name)
    if not me["round1Sent"]:
        local = store.get("dkg", session_id)
        if local is not None:
            package = local["round1Package"]  # resumed: the package this player made before
        elif kind == "DKG":
            package = ops.dkg_round1(store, session_id=session_id, identifier=me["identifier"], threshold=state["threshold"], participants=identifiers)
        else:
            package = ops.refresh_round1(store, key_name=key_name, session_id=session_id, participants=identifiers)
        api.call("POST", "accounts/dkg/round1", {"sessionId": session_id, "mpcPlayerCode": code, "package": package})
        log(f"round 1 sent as {code} (identifier {me['identifier']})")
    state = _wait(fetch, lambda s: all(p["round1Sent"] for p in s["players"]), timeout=timeout, poll=poll, what="every round-1 package")
    if not _me(state, code)["round2Sent"]:
        packages = ops.round2(store, session_id=session_id, round1_messages=state["round1Packages"])
        api.call("POST", "accounts/dkg/round2", {"sessionId": session_id, "mpcPlayerCode": code, "packages": packages})
        log("round 2 sent (the shares, each encrypted to its recipient)")
    state = _wait(fetch, lambda s: s["status"] in ("FINISHING", "COMPLETED"), timeout=timeout, poll=poll, what="every round-2 package")
    if not _me(state, code)["finished"]:
        public = _finish(store, api, state, session_id=session_id, code=code, key_name=key_name, kind=kind)
        api.call("POST", "accounts/dkg/finish", {"sessionId": session_id, "mpcPlayerCode": code, "publicKeyPackage": public})
        log(f"finished: group key {public['address']} stored as {key_name}")
    state = _wait(fetch, lambda s: s["status"] == "COMPLETED", timeout=timeout, poll=poll, what="the other players to finish")
    return _done(state, key_name)


def _finish(store: Store, api: Api, state: dict, *, session_id: str, code: str, key_name: str, kind: str) -> dict:
    if store.get("dkg", session_id) is None:
        # Finished before (and the answer was lost): the stored key must be the session's.
        public = ops.public_key_package(store, key_name)
        if public != state["publicKeyPackage"]:
            raise StoreError(f"key {key_name} is not the key of session {session_id}")
        return public
    try:
        if kind == "DKG":
            return ops.dkg_finish(store, session_id=session_id, key_name=key_name, round2_messages=state["round2Packages"])
        return ops.refresh_finish(store, session_id=session_id, key_name=key_name, round2_messages=state["round2Packages"])
    except dkg.DkgError as exc:
        me = _me(state, code)["identifier"]
        bad = next((m for m in state["round2Packages"] if m["sender"] == exc.culprit and m["recipient"] == me), None)
        if bad is not None:  # prove it: the service decides the complaint and names the culprit
            complaint = ops.complaint(store, session_id=session_id, round2_message=bad)
            api.call("POST", "accounts/dkg/finish", {"sessionId": session_id, "mpcPlayerCode": code, "complaint": complaint})
        raise


def _done(state: dict, key_name: str) -> dict:
    public = state.get("publicKeyPackage") or {}
    return {"sessionId": state["sessionId"], "status": state["status"], "account": state["account"], "address": public.get("address"), "key": key_name}


# --- signing --------------------------------------------------------------------------------------------


def sign(store: Store, api: Api, *, session_id: str, code: str, key_name: str, confirm: Callable[[str], bool], timeout: float = 600,
         poll: float = 0.5, log=lambda text: None) -> dict:
    """Take part as ``code`` in signing session ``session_id``: commit (once), wait for the
    signing package, decode the Solana message it signs and ask ``confirm(description)``,
    then sign (nonces consumed once) and send the partial signature with Sign Transaction.
    Returns {sessionId, transaction: the transaction result}."""
    fetch = lambda: api.call("POST", "transactions/dkg/status", {"sessionId": session_id})  # noqa: E731
    state = fetch()
    me = _me(state, code)
    key = M.from_json(ops.public_key_package(store, key_name))
    if key.group_public_key.hex() != state["groupPublicKey"]:
        raise StoreError(f"key {key_name} is not the key of account {state['account']['onchainId']}")
    if state["status"] == "COMPLETED":
        return {"sessionId": session_id, "transaction": None, "signature": state["signature"]}
    if not me["committed"]:
        commitment = _commitment(store, key_name, session_id) or ops.commit(store, key_name=key_name, session_id=session_id)
        api.call("POST", "transactions/dkg/commit", {"sessionId": session_id, "mpcPlayerCode": code, "commitment": commitment})
        log(f"committed as {code}")
    state = _wait(fetch, lambda s: s.get("signingPackage") is not None, timeout=timeout, poll=poll, what="the other players' commitments")
    package = state["signingPackage"]
    message = solana_message.decode(base64.b64decode(package["message"]))
    solana_message.check_signer(message, state["account"]["onchainId"])
    description = solana_message.describe(message)
    if not confirm(description):
        raise StoreError("signing declined")
    share = ops.sign(store, key_name=key_name, signing_package=package)
    entry = {"account": {"onchainId": state["account"]["onchainId"]},
             "dkgSigning": {"sessionId": session_id, "partialSignatures": [{"mpcPlayerCode": code, "partialSignature": share["signatureShare"]}]}}
    result = api.call("PATCH", "transactions/sign", {"transaction": {"offchainId": state["transaction"]["offchainId"]}, "offPlatformSigning": [entry]})
    log(f"partial signature sent; the transaction is {result.get('status')}")
    return {"sessionId": session_id, "transaction": result}


def _commitment(store: Store, key_name: str, session_id: str) -> dict | None:
    """The commitment of nonces this player made already (a commit whose answer was lost)."""
    record = store.get(f"nonces/{key_name}", session_id)
    if record is None or record.get("type") != "frost-signing-nonces":
        return None
    return {"type": "frost-signing-commitment", "version": record["version"], "ciphersuite": record["ciphersuite"], "sessionId": session_id,
            "identifier": record["identifier"], "hiding": record["hiding"], "binding": record["binding"]}
