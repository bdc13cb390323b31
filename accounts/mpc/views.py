"""Threshold-key endpoints (docs/threshold-signing.md, "The API"): key generation and refresh
sessions (/api/v1/accounts/dkg/...) and signing sessions (/api/v1/transactions/dkg/...).
The signing sessions' paths sit with the transactions they sign; their records and
cryptography are the accounts area's (the transaction engine imports no area)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from ledger_project.api.errors import NotFoundError
from tenancy.context import OperationContext
from tenancy.idempotency import idempotent
from ledger_project.api.schema import api_responses, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
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

KEYS = ["Threshold keys"]
PLAYER_RULES = (
    " mpcPlayerCode names an external player of the session (400 UNKNOWN_MPC_PLAYER; a backend player: 400 NOT_AN_EXTERNAL_PLAYER); a player "
    "bound to API keys speaks only through them (403 PLAYER_NOT_ALLOWED). Another organization's session, or an unknown one: 404."
)


class DkgViewSet(TenantScopedViewSet):
    model = DkgSession

    def scoped_queryset(self, queryset):
        return queryset.filter(cluster=self.cluster)

    def _session(self, data: dict) -> DkgSession:
        session = self.get_queryset().filter(offchain_id=data["sessionId"]).select_related("account").first()
        if session is None:
            raise NotFoundError("No such key-generation or refresh session.", field="itemData.sessionId")
        return session

    def _answer(self, session: DkgSession, code: int = status.HTTP_200_OK) -> Response:
        session.refresh_from_db()
        return Response(dkg_session_output(session), status=code)

    @extend_schema(operation_id="fetchDkgSession", summary="Fetch DKG Session", description="Creates no transaction. A key generation or refresh: its players, "
                   "every round-1 and round-2 package sent so far (round-2 packages are encrypted to their recipients), the group info once round 1 is "
                   "complete, and its end: COMPLETED (the account exists, its address the group key) or FAILED naming the culprit player.",
                   request=SessionInput, responses=api_responses({200: DkgSessionOutput}), parameters=operation_parameters(), tags=KEYS)
    def status(self, request):
        return Response(dkg_session_output(self._session(validated(SessionInput, request)["itemData"])))

    @extend_schema(operation_id="sendDkgRound1", summary="Send DKG Round 1", description="An external player's round-1 package (`dkg-round1` or "
                   "`refresh-round1` of the player CLI), checked before it is relayed: session, identifier, threshold, participants, elements, proof of "
                   "knowledge (400 INVALID_MESSAGE naming the field). The same package again changes nothing; another one: 409 MPC_MESSAGE_CONFLICT. "
                   "A session that ended: 400 DKG_SESSION_CLOSED." + PLAYER_RULES,
                   request=DkgRound1Input, responses=api_responses({200: DkgSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def round1(self, request):
        data = validated(DkgRound1Input, request)["itemData"]
        return self._answer(keygen.round1_submit(session=self._session(data), api_key=self.api_key, code=data["mpcPlayerCode"], message=data["package"]))

    @extend_schema(operation_id="sendDkgRound2", summary="Send DKG Round 2", description="An external player's round-2 packages, one encrypted share "
                   "for each other player, once every round-1 package is in (before: 400 DKG_ROUND_NOT_OPEN). The same packages again change nothing; "
                   "others: 409 MPC_MESSAGE_CONFLICT." + PLAYER_RULES,
                   request=DkgRound2Input, responses=api_responses({200: DkgSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def round2(self, request):
        data = validated(DkgRound2Input, request)["itemData"]
        return self._answer(keygen.round2_submit(session=self._session(data), api_key=self.api_key, code=data["mpcPlayerCode"], messages=data["packages"]))

    @extend_schema(operation_id="finishDkg", summary="Finish DKG", description="An external player's end, once every share is sent: the group info "
                   "it computed (`dkg-finish`; another group key than the round-1 packages define fails the session naming the player), or a complaint "
                   "about a share it received (`complain`), which the service decides with complaint_check and fails the session naming the culprit. "
                   "The session completes when every player confirmed: the account is created ACTIVE with the group key as its address (a refresh: the "
                   "key moves to its next generation)." + PLAYER_RULES,
                   request=DkgFinishInput, responses=api_responses({200: DkgSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def finish(self, request):
        data = validated(DkgFinishInput, request)["itemData"]
        session = keygen.finish_submit(session=self._session(data), api_key=self.api_key, code=data["mpcPlayerCode"],
                                       public_key_package=data.get("publicKeyPackage"), complaint=data.get("complaint"))
        return self._answer(session)

    @extend_schema(operation_id="refreshDkgShares", summary="Refresh DKG Shares", description="Proactive refresh of a DKG account's shares: new shares "
                   "of the same key, so the address does not change and old shares no longer combine with new ones. mpcPlayerCodes (default: every "
                   "player; at least the threshold) take part; players left out are removed from the key. Backend players only: done at once. With "
                   "external players: a session they join like a key generation (`api-dkg` of the player CLI). Another refresh of the account under way: "
                   "409 REFRESH_IN_PROGRESS; an account without a threshold key: 400 NOT_A_DKG_ACCOUNT.",
                   request=DkgRefreshInput, responses=api_responses({201: DkgSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def refresh(self, request):
        ctx, body = self.operation(DkgRefreshInput)
        data = body["itemData"]
        account = resolve_own_account(self.tenant, self.cluster, data["account"], field="itemData.account")
        session = keygen.refresh_start(ctx, account=account, codes=data.get("mpcPlayerCodes"))
        return self._answer(session, status.HTTP_201_CREATED)


def create_account_response(ctx: OperationContext, body: dict) -> Response:
    """Create Account with dkgKeys (accounts/endpoints.py hands it over): 201 with newAccount
    (onchainId null until the key exists) and dkgSession."""
    account, session = keygen.dkg_account_create(ctx, data=body["itemData"])
    identifiers = {"onchainId": account.address if account else None, "offchainId": str(account.offchain_id if account else session.account_offchain_id)}
    return Response({"newAccount": identifiers, "svmTransaction": None, "dkgSession": dkg_session_output(session)}, status=status.HTTP_201_CREATED)


class SigningSessionViewSet(TenantScopedViewSet):
    model = SigningSession

    def scoped_queryset(self, queryset):
        return queryset.filter(cluster=self.cluster)

    def _session(self, data: dict) -> SigningSession:
        session = self.get_queryset().filter(offchain_id=data["sessionId"]).select_related("key", "transaction", "account").first()
        if session is None:
            raise NotFoundError("No such signing session.", field="itemData.sessionId")
        return session

    def _answer(self, session: SigningSession, code: int = status.HTTP_200_OK) -> Response:
        session = SigningSession.objects.for_tenant(self.tenant).select_related("key", "transaction", "account").get(pk=session.pk)
        return Response(signing_session_output(session), status=code)

    @extend_schema(operation_id="openDkgSigningSession", summary="Open DKG Signing Session", description="A signing session (its sessionId) of a "
                   "PARTIALLY_SIGNED transaction by one of its DKG signers, with the players chosen to sign (at least the key's threshold: 400 "
                   "INVALID_MPC_PLAYERS; not a player of the key: 400 UNKNOWN_MPC_PLAYER). Backend players commit at once, in the worker; external "
                   "players send their commitment (`api-sign` of the player CLI), which fixes the signing package; their partial signatures then go "
                   "to Sign Transaction (dkgSigning). Backend players only: the worker signs and adds the signature by itself. 400 NOT_A_DKG_ACCOUNT, "
                   "NOT_A_SIGNER, ALREADY_SIGNED, INVALID_TRANSACTION_STATE; an unknown transaction or account, or another organization's: 404.",
                   request=SigningOpenInput, responses=api_responses({201: SigningSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def open(self, request):
        data = validated(SigningOpenInput, request)["itemData"]
        account = resolve_own_account(self.tenant, self.cluster, data["account"], field="itemData.account")
        ident = data["transaction"]
        tx = transaction_selectors.transaction_get(queryset=Transaction.objects.for_tenant(self.tenant).filter(cluster=self.cluster),
                                                   onchain_id=ident.get("onchainId"), offchain_id=ident.get("offchainId"))
        session = sessions.session_open(tenant=self.tenant, api_key=self.api_key, transaction=tx, account=account, codes=data["mpcPlayerCodes"])
        return self._answer(session, status.HTTP_201_CREATED)

    @extend_schema(operation_id="sendDkgSigningCommitment", summary="Send DKG Signing Commitment", description="An external player's round-one "
                   "commitment (`commit` of the player CLI). The last commitment fixes the signing package. The same commitment again changes "
                   "nothing; another one: 409 MPC_MESSAGE_CONFLICT; a session that ended: 400 SIGNING_SESSION_CLOSED." + PLAYER_RULES,
                   request=SigningCommitInput, responses=api_responses({200: SigningSessionOutput}, mutation=True), parameters=operation_parameters(), tags=KEYS)
    @idempotent
    def commit(self, request):
        data = validated(SigningCommitInput, request)["itemData"]
        return self._answer(sessions.commitment_submit(session=self._session(data), api_key=self.api_key, code=data["mpcPlayerCode"], message=data["commitment"]))

    @extend_schema(operation_id="fetchDkgSigningSession", summary="Fetch DKG Signing Session", description="Creates no transaction. A signing "
                   "session: its players, the commitments in, the signing package once fixed, which partial signatures arrived, and the signature "
                   "once aggregated.", request=SessionInput, responses=api_responses({200: SigningSessionOutput}), parameters=operation_parameters(), tags=KEYS)
    def status(self, request):
        return Response(signing_session_output(self._session(validated(SessionInput, request)["itemData"])))
