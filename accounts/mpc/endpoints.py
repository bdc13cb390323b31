"""Threshold keys' API (docs/threshold-signing.md, "The API"), one declaration per operation
(tenancy/endpoints.py says what a row holds): key generation and refresh sessions
(/api/v1/accounts/dkg/...) and signing sessions (/api/v1/transactions/dkg/...). The signing
sessions' paths sit with the transactions they sign; their records and cryptography are the
accounts area's (the transaction engine imports no area). Routes: accounts/urls.py."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.errors import NotFoundError
from tenancy.context import OperationContext
from tenancy.endpoints import Endpoint
from transactions import selectors as transaction_selectors
from transactions.models import Transaction

from ..lookup import resolve_own_account
from . import keygen, sessions
from .models import DkgSession, SigningSession
from .serializers import (
    DkgFinishInput,
    DkgRefreshInput,
    DkgRound1Input,
    DkgRound2Input,
    DkgSessionOutput,
    SessionInput,
    SigningCommitInput,
    SigningOpenInput,
    SigningSessionOutput,
    dkg_session_output,
    signing_session_output,
)

KEYS = ("Threshold keys",)
PLAYER_RULES = (
    " mpcPlayerCode names an external player of the session (400 UNKNOWN_MPC_PLAYER; a backend player: 400 NOT_AN_EXTERNAL_PLAYER); a player "
    "bound to API keys speaks only through them (403 PLAYER_NOT_ALLOWED). Another organization's session, or an unknown one: 404."
)
_D, _S = "DkgViewSet", "SigningSessionViewSet"


def _on_its_cluster(self, queryset):
    return queryset.filter(cluster=self.cluster)


MODELS = {_D: DkgSession, _S: SigningSession}
MEMBERS = {_D: {"scoped_queryset": _on_its_cluster}, _S: {"scoped_queryset": _on_its_cluster}}


# --- key generation and refresh -------------------------------------------------------------


def _dkg_session(door, data: dict) -> DkgSession:
    session = door.get_queryset().filter(offchain_id=data["sessionId"]).select_related("account").first()
    if session is None:
        raise NotFoundError("No such key-generation or refresh session.", field="itemData.sessionId")
    return session


def _dkg_answer(session: DkgSession, code: int = status.HTTP_200_OK) -> Response:
    session.refresh_from_db()
    return Response(dkg_session_output(session), status=code)


def _dkg_status(door, ctx, body):
    return Response(dkg_session_output(_dkg_session(door, body["itemData"])))


def _round1(door, ctx, body):
    data = body["itemData"]
    return _dkg_answer(keygen.round1_submit(session=_dkg_session(door, data), api_key=door.api_key, code=data["mpcPlayerCode"], message=data["package"]))


def _round2(door, ctx, body):
    data = body["itemData"]
    return _dkg_answer(keygen.round2_submit(session=_dkg_session(door, data), api_key=door.api_key, code=data["mpcPlayerCode"], messages=data["packages"]))


def _finish(door, ctx, body):
    data = body["itemData"]
    session = keygen.finish_submit(session=_dkg_session(door, data), api_key=door.api_key, code=data["mpcPlayerCode"],
                                   public_key_package=data.get("publicKeyPackage"), complaint=data.get("complaint"))
    return _dkg_answer(session)


def _refresh(door, ctx, body):
    data = body["itemData"]
    account = resolve_own_account(door.tenant, door.cluster, data["account"], field="itemData.account")
    return _dkg_answer(keygen.refresh_start(ctx, account=account, codes=data.get("mpcPlayerCodes")), status.HTTP_201_CREATED)


def create_account_response(ctx: OperationContext, body: dict) -> Response:
    """Create Account with dkgKeys (accounts/endpoints.py hands it over): 201 with newAccount
    (onchainId null until the key exists) and dkgSession."""
    account, session = keygen.dkg_account_create(ctx, data=body["itemData"])
    identifiers = {"onchainId": account.address if account else None, "offchainId": str(account.offchain_id if account else session.account_offchain_id)}
    return Response({"newAccount": identifiers, "svmTransaction": None, "dkgSession": dkg_session_output(session)}, status=status.HTTP_201_CREATED)


# --- signing sessions -----------------------------------------------------------------------


def _signing_session(door, data: dict) -> SigningSession:
    session = door.get_queryset().filter(offchain_id=data["sessionId"]).select_related("key", "transaction", "account").first()
    if session is None:
        raise NotFoundError("No such signing session.", field="itemData.sessionId")
    return session


def _signing_answer(door, session: SigningSession, code: int = status.HTTP_200_OK) -> Response:
    session = SigningSession.objects.for_tenant(door.tenant).select_related("key", "transaction", "account").get(pk=session.pk)
    return Response(signing_session_output(session), status=code)


def _open(door, ctx, body):
    data = body["itemData"]
    account = resolve_own_account(door.tenant, door.cluster, data["account"], field="itemData.account")
    ident = data["transaction"]
    tx = transaction_selectors.transaction_get(queryset=Transaction.objects.for_tenant(door.tenant).filter(cluster=door.cluster),
                                               onchain_id=ident.get("onchainId"), offchain_id=ident.get("offchainId"))
    session = sessions.session_open(tenant=door.tenant, api_key=door.api_key, transaction=tx, account=account, codes=data["mpcPlayerCodes"])
    return _signing_answer(door, session, status.HTTP_201_CREATED)


def _commit(door, ctx, body):
    data = body["itemData"]
    session = sessions.commitment_submit(session=_signing_session(door, data), api_key=door.api_key, code=data["mpcPlayerCode"], message=data["commitment"])
    return _signing_answer(door, session)


def _signing_status(door, ctx, body):
    return Response(signing_session_output(_signing_session(door, body["itemData"])))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_D, "status", "accounts/dkg/status", "post", "dkg-status", "fetchDkgSession", "Fetch DKG Session",
             "Creates no transaction. A key generation or refresh: its players, "
             "every round-1 and round-2 package sent so far (round-2 packages are encrypted to their recipients), the group info once round 1 is "
             "complete, and its end: COMPLETED (the account exists, its address the group key) or FAILED naming the culprit player.",
             SessionInput, _dkg_status, {200: DkgSessionOutput}, mutation=False, tags=KEYS),
    Endpoint(_D, "round1", "accounts/dkg/round1", "post", "dkg-round1", "sendDkgRound1", "Send DKG Round 1",
             "An external player's round-1 package (`dkg-round1` or "
             "`refresh-round1` of the player CLI), checked before it is relayed: session, identifier, threshold, participants, elements, proof of "
             "knowledge (400 INVALID_MESSAGE naming the field). The same package again changes nothing; another one: 409 MPC_MESSAGE_CONFLICT. "
             "A session that ended: 400 DKG_SESSION_CLOSED." + PLAYER_RULES,
             DkgRound1Input, _round1, {200: DkgSessionOutput}, tags=KEYS),
    Endpoint(_D, "round2", "accounts/dkg/round2", "post", "dkg-round2", "sendDkgRound2", "Send DKG Round 2",
             "An external player's round-2 packages, one encrypted share "
             "for each other player, once every round-1 package is in (before: 400 DKG_ROUND_NOT_OPEN). The same packages again change nothing; "
             "others: 409 MPC_MESSAGE_CONFLICT." + PLAYER_RULES,
             DkgRound2Input, _round2, {200: DkgSessionOutput}, tags=KEYS),
    Endpoint(_D, "finish", "accounts/dkg/finish", "post", "dkg-finish", "finishDkg", "Finish DKG",
             "An external player's end, once every share is sent: the group info "
             "it computed (`dkg-finish`; another group key than the round-1 packages define fails the session naming the player), or a complaint "
             "about a share it received (`complain`), which the service decides with complaint_check and fails the session naming the culprit. "
             "The session completes when every player confirmed: the account is created ACTIVE with the group key as its address (a refresh: the "
             "key moves to its next generation)." + PLAYER_RULES,
             DkgFinishInput, _finish, {200: DkgSessionOutput}, tags=KEYS),
    Endpoint(_D, "refresh", "accounts/dkg/refresh", "post", "dkg-refresh", "refreshDkgShares", "Refresh DKG Shares",
             "Proactive refresh of a DKG account's shares: new shares "
             "of the same key, so the address does not change and old shares no longer combine with new ones. mpcPlayerCodes (default: every "
             "player; at least the threshold) take part; players left out are removed from the key. Backend players only: done at once. With "
             "external players: a session they join like a key generation (`api-dkg` of the player CLI). Another refresh of the account under way: "
             "409 REFRESH_IN_PROGRESS; an account without a threshold key: 400 NOT_A_DKG_ACCOUNT.",
             DkgRefreshInput, _refresh, {201: DkgSessionOutput}, tags=KEYS),
    Endpoint(_S, "open", "transactions/dkg/open", "post", "dkg-signing-open", "openDkgSigningSession", "Open DKG Signing Session",
             "A signing session (its sessionId) of a "
             "PARTIALLY_SIGNED transaction by one of its DKG signers, with the players chosen to sign (at least the key's threshold: 400 "
             "INVALID_MPC_PLAYERS; not a player of the key: 400 UNKNOWN_MPC_PLAYER). Backend players commit at once, in the worker; external "
             "players send their commitment (`api-sign` of the player CLI), which fixes the signing package; their partial signatures then go "
             "to Sign Transaction (dkgSigning). Backend players only: the worker signs and adds the signature by itself. 400 NOT_A_DKG_ACCOUNT, "
             "NOT_A_SIGNER, ALREADY_SIGNED, INVALID_TRANSACTION_STATE; an unknown transaction or account, or another organization's: 404.",
             SigningOpenInput, _open, {201: SigningSessionOutput}, tags=KEYS),
    Endpoint(_S, "commit", "transactions/dkg/commit", "post", "dkg-signing-commit", "sendDkgSigningCommitment", "Send DKG Signing Commitment",
             "An external player's round-one "
             "commitment (`commit` of the player CLI). The last commitment fixes the signing package. The same commitment again changes "
             "nothing; another one: 409 MPC_MESSAGE_CONFLICT; a session that ended: 400 SIGNING_SESSION_CLOSED." + PLAYER_RULES,
             SigningCommitInput, _commit, {200: SigningSessionOutput}, tags=KEYS),
    Endpoint(_S, "status", "transactions/dkg/status", "post", "dkg-signing-status", "fetchDkgSigningSession", "Fetch DKG Signing Session",
             "Creates no transaction. A signing "
             "session: its players, the commitments in, the signing package once fixed, which partial signatures arrived, and the signature "
             "once aggregated.",
             SessionInput, _signing_status, {200: SigningSessionOutput}, mutation=False, tags=KEYS),
)
