"""Key generation (Create Account with ``dkgKeys``) and share refresh of DKG accounts
(docs/threshold-signing.md, "DKG accounts").

A session runs the Pedersen DKG of ``threshold.dkg`` among its players: backend
players (the service's own share holders, each sealed under its own key) compute their
rounds in the worker (``keygen_advance``, one committed step at a time, so a killed worker
resumes where it stopped); external players send theirs through the API (round1, round2,
finish). When every player confirmed the group key, the account is created ACTIVE with the
group key as its address (DKG), or the key moves to its next generation (refresh). When
every player is a backend player the rounds run at once, in the request.

Any failure ends the session FAILED naming the player at fault (``culprit_code``): a proof
of knowledge or commitment that does not verify, a share that does not match its
commitment (the recipient blames the sender), a complaint decided by ``complaint_check``,
a player whose confirmed group key differs, or one that did not send its part in time.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from tenancy.scoping import worker_only

from threshold import dkg as D
from threshold import messages as M
from threshold.keys import KeyPackage, PublicKeyPackage
from . import keyring
from .common import json_safe, kick, parse, player_may_speak, seal_key_package, unseal_key_package
from .models import DkgKind, DkgPlayer, DkgSession, DkgStatus, SigningNonce, SigningSession, SigningStatus, SIGNING_OPEN, ThresholdKey, ThresholdShare
from .keygen_plan import Plan, Player, check_players, dkg_plan
from .keygen_public import kind_type, round1_packages, run_in_memory, session_public
from .purposes import dkg_state_purpose, share_purpose_of

OPEN = (DkgStatus.ROUND1, DkgStatus.ROUND2, DkgStatus.FINISHING)


# --- records -------------------------------------------------------------------------------------


def _session_rows(*, tenant, cluster, kind, plan: Plan, api_key, request_id=None, account=None, account_data=None, status=DkgStatus.ROUND1,
                  offchain_id: str | None = None) -> DkgSession:
    session = DkgSession.objects.for_tenant(tenant).create(
        offchain_id=uuid.UUID(offchain_id) if offchain_id else uuid.uuid4(), tenant=tenant, cluster=cluster, kind=kind, status=status, threshold=plan.threshold, account=account,
        account_data=json_safe(account_data or {}), account_offchain_id=uuid.uuid4() if kind == DkgKind.DKG else None,
        key_usage=plan.key_usage, is_default=plan.is_default, created_by_key=api_key, request_id=request_id,
        expires_at=timezone.now() + timedelta(seconds=settings.LEDGER_MPC_DKG_SESSION_SECONDS),
    )
    DkgPlayer.objects.bulk_create([DkgPlayer(session=session, player_code=p.code, identifier=p.identifier, backend=p.backend, api_keys=list(p.api_keys)) for p in plan.players])
    return session


def _store_generation(key: ThresholdKey, generation: int, public: PublicKeyPackage, players, backend_keys: dict[str, KeyPackage], api_keys: dict[str, list]) -> None:
    """The share rows of one generation: backend shares sealed under their players' keys,
    external players' verifying shares only."""
    group = public.group_public_key.hex()
    rows = []
    for p in players:
        verifying = public.verifying_shares[p.identifier].hex()
        sealed = None
        if p.backend:
            sealed = seal_key_package(p.code, backend_keys[p.code], share_purpose_of(group, p.code, p.identifier, generation))
        rows.append(ThresholdShare(key=key, player_code=p.code, identifier=p.identifier, generation=generation, backend=p.backend,
                                   verifying_share=verifying, api_keys=list(api_keys.get(p.code) or []), sealed=sealed))
    ThresholdShare.objects.bulk_create(rows)


def _create_account(session: DkgSession, public: PublicKeyPackage, players, backend_keys: dict[str, KeyPackage], *, account=None):
    """Write phase of a DKG's end: the account (ACTIVE, the group key as its address), its
    key and every player's share row."""
    from ..services import account_draft, account_save

    if account is None:
        if session.created_by_key is None:
            raise LedgerError("The API key that requested the account was deleted meanwhile; request it again.", code="DKG_SESSION_CLOSED")
        account = account_draft(tenant=session.tenant, cluster=session.cluster, api_key=session.created_by_key, data=session.account_data,
                                threshold_address=M.base58(public.group_public_key))
    account.offchain_id = session.account_offchain_id
    account_save(account)
    key = ThresholdKey.objects.create(account=account, group_public_key=public.group_public_key.hex(), threshold=public.threshold,
                                      key_usage=session.key_usage, is_default=session.is_default, public_key_package=M.to_json(public))
    _store_generation(key, 1, public, players, backend_keys, {p.code: p.api_keys for p in players})
    return account


# --- Create Account with dkgKeys (request) -----------------------------------------------------------


def dkg_account_create(ctx: OperationContext, *, data: dict):
    """Create Account with ``dkgKeys``: validates like any New account definition, then runs
    the DKG at once when every player is a backend player (the account exists, ACTIVE, on
    return) or opens a session the external players join (the account is created when it
    completes). Returns (account or None, session)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    from ..services import account_draft

    plan = dkg_plan(data)
    account_draft(tenant=tenant, cluster=cluster, api_key=ctx.api_key, data=data, threshold_address="")  # every other rule (no writes)
    if not plan.all_backend:
        with write_phase():
            session = _session_rows(tenant=tenant, cluster=cluster, kind=DkgKind.DKG, plan=plan, api_key=ctx.api_key, request_id=ctx.request_id, account_data=data)
            kick(_advance_task(), session_pk=session.pk)
        return None, session
    session_id = str(uuid.uuid4())
    keys = run_in_memory(DkgKind.DKG, session_id, plan.threshold, [p.identifier for p in plan.players])
    public = keys[1].public
    account = account_draft(tenant=tenant, cluster=cluster, api_key=ctx.api_key, data=data, threshold_address=M.base58(public.group_public_key))
    with write_phase():
        session = _session_rows(tenant=tenant, cluster=cluster, kind=DkgKind.DKG, plan=plan, api_key=ctx.api_key, request_id=ctx.request_id,
                                account_data=data, status=DkgStatus.COMPLETED, offchain_id=session_id)
        account = _create_account(session, public, plan.players, {p.code: keys[p.identifier] for p in plan.players}, account=account)
        _mark_completed(session, account, public)
    return account, session


def _mark_completed(session: DkgSession, account, public: PublicKeyPackage) -> None:
    session.status, session.account, session.completed_at = DkgStatus.COMPLETED, account, timezone.now()
    session.save(update_fields=["status", "account", "completed_at", "updated_at"])
    session.players.update(finished=True, sealed_state=None, public_key_package=M.to_json(public))


# --- refresh (request) ---------------------------------------------------------------------------------


def refresh_start(ctx: OperationContext, *, account, codes: list[str] | None = None) -> DkgSession:
    """Refresh the shares of ``account``'s key among ``codes`` (default: every player); the
    address does not change, and players left out are removed from the key. Backend players
    only: at once; with external players, a session they join (refresh-round1 ...)."""
    tenant = ctx.tenant
    key = ThresholdKey.objects.filter(account=account).first()
    if key is None:
        raise LedgerError("This account has no threshold key (dkgKeys): there are no shares to refresh.", field="itemData.account", code="NOT_A_DKG_ACCOUNT")
    shares = {s.player_code: s for s in ThresholdShare.objects.filter(key=key, generation=key.generation)}
    chosen = list(codes) if codes else sorted(shares, key=lambda c: shares[c].identifier)
    for index, code in enumerate(chosen):
        if code not in shares:
            raise LedgerError(f"{code} is not a player of this account's key.", field=f"itemData.mpcPlayerCodes[{index}]", code="UNKNOWN_MPC_PLAYER")
    check_players(chosen, field="itemData.mpcPlayerCodes", fields=[f"itemData.mpcPlayerCodes[{i}]" for i in range(len(chosen))])
    if len(chosen) < key.threshold:
        raise LedgerError(f"A refresh needs at least the threshold ({key.threshold}) of players.", field="itemData.mpcPlayerCodes", code="INVALID_MPC_PLAYERS")
    players = tuple(sorted((Player(c, shares[c].identifier, shares[c].backend, tuple(shares[c].api_keys or ())) for c in chosen), key=lambda p: p.identifier))
    plan = Plan(players, key.threshold, key.key_usage, key.is_default)
    running = DkgSession.objects.for_tenant(tenant).filter(account=account, kind=DkgKind.REFRESH, status__in=OPEN)
    if running.exists():
        raise ConflictError("A refresh of this account's shares is under way; wait for it to end.", field="itemData.account", code="REFRESH_IN_PROGRESS")
    if not plan.all_backend:
        with write_phase():
            session = _session_rows(tenant=tenant, cluster=account.cluster, kind=DkgKind.REFRESH, plan=plan, api_key=ctx.api_key, request_id=ctx.request_id, account=account)
            kick(_advance_task(), session_pk=session.pk)
        return session
    old = {p.identifier: _backend_key(key, p.code) for p in players}
    session_id = str(uuid.uuid4())
    keys = run_in_memory(DkgKind.REFRESH, session_id, key.threshold, [p.identifier for p in players], old)
    with write_phase():
        session = _session_rows(tenant=tenant, cluster=account.cluster, kind=DkgKind.REFRESH, plan=plan, api_key=ctx.api_key, request_id=ctx.request_id,
                                account=account, status=DkgStatus.COMPLETED, offchain_id=session_id)
        public = keys[players[0].identifier].public
        _next_generation(ThresholdKey.objects.select_for_update().get(pk=key.pk), public, players, {p.code: keys[p.identifier] for p in players})
        _mark_completed(session, account, public)
    return session


def _backend_key(key: ThresholdKey, code: str, generation: int | None = None) -> KeyPackage:
    share = ThresholdShare.objects.get(key=key, player_code=code, generation=generation or key.generation)
    purpose = share_purpose_of(key.group_public_key, code, share.identifier, share.generation)
    return unseal_key_package(code, share.sealed, purpose, verifying_share=share.verifying_share)


def _next_generation(key: ThresholdKey, public: PublicKeyPackage, players, backend_keys: dict[str, KeyPackage]) -> None:
    """One transaction: the new generation's rows, the key switched to it, the old rows gone
    (players left out of the refresh with them), open signing sessions of the old shares ended."""
    if public.group_public_key.hex() != key.group_public_key:
        raise LedgerError("The refreshed shares are for another group key.", code="KEY_CUSTODY_ERROR")
    generation = key.generation + 1
    api_keys = {s.player_code: s.api_keys for s in ThresholdShare.objects.filter(key=key, generation=key.generation)}
    _store_generation(key, generation, public, players, backend_keys, api_keys)
    ThresholdShare.objects.filter(key=key, generation__lt=generation).delete()
    key.generation, key.public_key_package, key.refreshed_at = generation, M.to_json(public), timezone.now()
    key.save(update_fields=["generation", "public_key_package", "refreshed_at"])
    stale = SigningSession.objects.for_tenant(key.account.tenant).filter(key=key, status__in=SIGNING_OPEN, generation__lt=generation)
    SigningNonce.objects.filter(session__in=stale, status="FRESH").delete()
    stale.update(status=SigningStatus.CANCELLED, error_message="The key's shares were refreshed: open a new signing session.", updated_at=timezone.now())


# --- messages of external players (requests) ---------------------------------------------------------------


def _locked(session: DkgSession) -> tuple[DkgSession, list[DkgPlayer]]:
    session = DkgSession.objects.for_tenant(session.tenant).select_for_update().get(pk=session.pk)
    return session, list(session.players.select_for_update().order_by("identifier"))


def _external(session: DkgSession, players, code: str, api_key) -> DkgPlayer:
    player = next((p for p in players if p.player_code == code), None)
    if player is None:
        raise LedgerError(f"{code} is not a player of this session.", field="itemData.mpcPlayerCode", code="UNKNOWN_MPC_PLAYER")
    if player.backend:
        raise LedgerError(f"{code} is a backend player: the service sends its messages.", field="itemData.mpcPlayerCode", code="NOT_AN_EXTERNAL_PLAYER")
    player_may_speak(player.api_keys, api_key, code, field="itemData.mpcPlayerCode")
    if session.status in (DkgStatus.COMPLETED, DkgStatus.FAILED):
        raise LedgerError(f"The session is {session.status}{': ' + session.error_message if session.error_message else ''}.", field="itemData.sessionId", code="DKG_SESSION_CLOSED")
    return player


def _conflict(what: str, code: str) -> ConflictError:
    return ConflictError(f"Player {code} already sent another {what} in this session; a player sends one.", field="itemData", code="MPC_MESSAGE_CONFLICT")


def round1_submit(*, session: DkgSession, api_key, code: str, message: dict) -> DkgSession:
    """An external player's round-1 package: checked (its session, identifier, threshold,
    participants, elements, and for key generation its proof of knowledge) before it is
    relayed to the others."""
    field = "itemData.package"
    with write_phase():
        session, players = _locked(session)
        player = _external(session, players, code, api_key)
        package = parse(message, kind_type(session, 1), field=field)
        _check_round1(session, players, player, package, field)
        canonical = M.to_json(package)
        if player.round1 is not None:
            if player.round1 != canonical:
                raise _conflict("round-1 package", code)
            return session
        if session.status != DkgStatus.ROUND1:  # pragma: no cover - round 2 starts only once every round-1 package is in
            raise LedgerError("Round 1 of this session is over.", field="itemData.sessionId", code="DKG_SESSION_CLOSED")
        player.round1 = canonical
        player.save(update_fields=["round1"])
        _promote(session, players)
        kick(_advance_task(), session_pk=session.pk)
    return session


def _check_round1(session, players, player, package: D.Round1Package, field: str) -> None:
    from .common import invalid

    if package.session_id != session.session_id:
        raise invalid("sessionId is not this session's.", field=f"{field}.sessionId")
    if package.identifier != player.identifier:
        raise invalid(f"Player {player.player_code} has identifier {player.identifier}.", field=f"{field}.identifier")
    if package.threshold != session.threshold or list(package.participants) != [p.identifier for p in players]:
        raise invalid(f"The session is {session.threshold} of participants {[p.identifier for p in players]}.", field=f"{field}.participants")
    expected = session.threshold if session.kind == DkgKind.DKG else session.threshold - 1
    if len(package.commitment) != expected:
        raise invalid(f"The commitment has {expected} elements here.", field=f"{field}.commitment")
    if session.kind == DkgKind.DKG and not D.verify_proof_of_knowledge(package):
        raise invalid("The proof of knowledge does not verify.", field=f"{field}.proofOfKnowledge")
    if session.kind == DkgKind.REFRESH and package.group_public_key.hex() != session.account.threshold_key.group_public_key:
        raise invalid("It refreshes another group key.", field=f"{field}.groupPublicKey")


def round2_submit(*, session: DkgSession, api_key, code: str, messages: list[dict]) -> DkgSession:
    """An external player's round-2 packages: one encrypted share for each other player."""
    from .common import invalid

    field = "itemData.packages"
    with write_phase():
        session, players = _locked(session)
        player = _external(session, players, code, api_key)
        packages = [parse(m, kind_type(session, 2), field=f"{field}[{i}]") for i, m in enumerate(messages)]
        for i, package in enumerate(packages):
            if package.session_id != session.session_id or package.sender != player.identifier:
                raise invalid(f"Each package is sent by {player.identifier} in this session.", field=f"{field}[{i}]")
        others = sorted(p.identifier for p in players if p.pk != player.pk)
        if sorted(p.recipient for p in packages) != others:
            raise invalid(f"One package for each other player is needed: recipients {others}.", field=field)
        canonical = [M.to_json(p) for p in sorted(packages, key=lambda p: p.recipient)]
        if player.round2 is not None:
            if player.round2 != canonical:
                raise _conflict("set of round-2 packages", code)
            return session
        _promote(session, players)
        if session.status != DkgStatus.ROUND2:
            waiting = ", ".join(p.player_code for p in players if p.round1 is None)
            raise LedgerError(f"Round 2 starts once every round-1 package is in (waiting for {waiting}).", field="itemData.sessionId", code="DKG_ROUND_NOT_OPEN")
        player.round2 = canonical
        player.save(update_fields=["round2"])
        _promote(session, players)
        kick(_advance_task(), session_pk=session.pk)
    return session


def finish_submit(*, session: DkgSession, api_key, code: str, public_key_package: dict | None = None, complaint: dict | None = None) -> DkgSession:
    """An external player's end of the session: the group info it computed (it must be the
    one the round-1 packages define), or a complaint about a share it received, which the
    service decides (``complaint_check``) — the session then fails naming the culprit."""
    if (public_key_package is None) == (complaint is None):
        raise LedgerError("Give publicKeyPackage or complaint, not both.", field="itemData", code="CONFLICTING_FIELDS")
    with write_phase():
        session, players = _locked(session)
        player = _external(session, players, code, api_key)
        _promote(session, players)
        if session.status != DkgStatus.FINISHING:
            raise LedgerError("The session's shares are not all sent yet.", field="itemData.sessionId", code="DKG_ROUND_NOT_OPEN")
        if complaint is not None:
            filed = parse(complaint, "frost-dkg-complaint", field="itemData.complaint")
            if filed.accuser != player.identifier or filed.session_id != session.session_id:
                from .common import invalid

                raise invalid(f"A complaint of player {code} in this session.", field="itemData.complaint.accuser")
            by_identifier = {p.identifier: p.player_code for p in players}
            culprit = D.complaint_check(filed, round1_packages(players))
            _fail(session, by_identifier.get(culprit), f"player {code} complained about the share of {by_identifier.get(filed.accused)}; "
                  f"the complaint shows {by_identifier.get(culprit)} at fault")
            return session
        public = parse(public_key_package, "frost-public-key-package", field="itemData.publicKeyPackage")
        if player.finished:
            return session
        if M.to_json(public) != M.to_json(session_public(session, players)):
            _fail(session, code, f"player {code} confirmed another group key than the round-1 packages define")
            return session
        player.finished, player.public_key_package = True, M.to_json(public)
        player.save(update_fields=["finished", "public_key_package"])
        kick(_advance_task(), session_pk=session.pk)
    return session


def _fail(session: DkgSession, culprit: str | None, why: str) -> None:
    session.status, session.culprit_code = DkgStatus.FAILED, culprit or ""
    session.error_message = f"Key generation failed: {why}." if session.kind == DkgKind.DKG else f"Refresh failed: {why}."
    session.save(update_fields=["status", "culprit_code", "error_message", "updated_at"])
    session.players.update(sealed_state=None)  # backend players' secrets of a dead session


# --- backend players (worker) -----------------------------------------------------------------------------


def _advance_task():
    from ..tasks import mpc_keygen_advance

    return mpc_keygen_advance


@worker_only  # the worker's steps: the session was resolved through a scoped door when it was made
def keygen_advance(*, session_pk: int, steps: int = 64) -> str:
    """Run the backend players' next steps, one committed database transaction each, until
    the session waits for an external player or ends. Returns its status."""
    for _ in range(steps):
        with transaction.atomic():
            session = DkgSession.unscoped.select_for_update().get(pk=session_pk)
            if session.status not in OPEN:
                return session.status
            players = list(session.players.select_for_update().order_by("identifier"))
            if session.expires_at <= timezone.now():
                late = next((p for p in players if not _sent_current(session, p)), None)
                _fail(session, late.player_code if late else None, f"it did not end within {settings.LEDGER_MPC_DKG_SESSION_SECONDS} s" + (f" ({late.player_code} did not send its part)" if late else ""))
                return session.status
            if not _step(session, players):
                return session.status
    return DkgSession.unscoped.get(pk=session_pk).status


def _sent_current(session: DkgSession, player: DkgPlayer) -> bool:
    return {DkgStatus.ROUND1: player.round1 is not None, DkgStatus.ROUND2: player.round2 is not None}.get(session.status, player.finished)


def _step(session: DkgSession, players: list[DkgPlayer]) -> bool:
    """One step (its caller commits it). False: nothing to do until an external player speaks."""
    by_identifier = {p.identifier: p for p in players}
    purpose = dkg_state_purpose
    _promote(session, players)  # a round completed by a message stored before the promotion existed
    if session.status == DkgStatus.ROUND1:
        todo = next((p for p in players if p.backend and p.round1 is None), None)
        if todo is not None:
            identifiers = [p.identifier for p in players]
            if session.kind == DkgKind.DKG:
                state = D.round1(session_id=session.session_id, identifier=todo.identifier, threshold=session.threshold, participants=identifiers)
            else:
                key = session.account.threshold_key
                state = D.refresh_round1(session_id=session.session_id, key_package=_backend_key(key, todo.player_code), participants=identifiers)
            todo.sealed_state = seal_key_state(todo, state)
            todo.round1 = M.to_json(state.package)
            todo.save(update_fields=["sealed_state", "round1"])
            _promote(session, players)
            return True
        return False
    if session.status == DkgStatus.ROUND2:
        todo = next((p for p in players if p.backend and p.round2 is None), None)
        if todo is not None:
            state = open_key_state(todo)
            try:
                state, out = D.round2(state, round1_packages(players))
            except D.DkgError as exc:
                _fail(session, by_identifier[exc.culprit].player_code if exc.culprit in by_identifier else None, str(exc))
                return False
            todo.sealed_state = seal_key_state(todo, state)
            todo.round2 = [M.to_json(p) for p in out]
            todo.save(update_fields=["sealed_state", "round2"])
            _promote(session, players)
            return True
        return False
    todo = next((p for p in players if p.backend and not p.finished), None)
    if todo is not None:
        received = [M.from_json(m) for p in players if p.pk != todo.pk for m in p.round2 if m["recipient"] == todo.identifier]
        try:
            if session.kind == DkgKind.DKG:
                key = D.finish(open_key_state(todo), received)
            else:
                key = D.refresh_finish(open_key_state(todo), received, _backend_key(session.account.threshold_key, todo.player_code))
        except D.DkgError as exc:
            _fail(session, by_identifier[exc.culprit].player_code if exc.culprit in by_identifier else None, str(exc))
            return False
        expected = session_public(session, players)
        if expected is None or M.to_json(key.public) != M.to_json(expected):  # pragma: no cover - finish checks the same commitments
            _fail(session, None, "the group key does not follow from the round-1 packages")
            return False
        todo.sealed_state = keyring.seal(todo.player_code, _json_bytes(M.to_json(key)), purpose(todo))
        todo.public_key_package, todo.finished = M.to_json(key.public), True
        todo.save(update_fields=["sealed_state", "public_key_package", "finished"])
        return True
    if all(p.finished for p in players):
        _complete(session, players)
        return False
    return False


def _json_bytes(value) -> bytes:
    import json

    return json.dumps(value).encode()


def seal_key_state(player: DkgPlayer, state) -> dict:
    return keyring.seal(player.player_code, _json_bytes(M.to_json(state)), dkg_state_purpose(player))


def open_key_state(player: DkgPlayer):
    import json

    return M.from_json(json.loads(keyring.unseal(player.player_code, player.sealed_state, dkg_state_purpose(player))))


def _move(session: DkgSession, status: str) -> bool:
    session.status = status
    session.save(update_fields=["status", "updated_at"])
    return True


def _promote(session: DkgSession, players) -> None:
    """The next round opens in the transaction that stores the current round's last message
    (whoever sends it), so a round is never complete while the session still says otherwise."""
    if session.status == DkgStatus.ROUND1 and all(p.round1 is not None for p in players):
        _move(session, DkgStatus.ROUND2)
    if session.status == DkgStatus.ROUND2 and all(p.round2 is not None for p in players):
        _move(session, DkgStatus.FINISHING)


def _complete(session: DkgSession, players: list[DkgPlayer]) -> None:
    """Every player confirmed the group key: the account (DKG) or the new generation
    (refresh), in the step's transaction. A rule the account breaks now (a reference taken
    while the players were at work) fails the session instead."""
    public = session_public(session, players)
    backend_keys = {p.player_code: open_key_state(p) for p in players if p.backend}
    plan_players = [Player(p.player_code, p.identifier, p.backend, tuple(p.api_keys or ())) for p in players]
    if session.kind == DkgKind.DKG:
        try:
            with transaction.atomic():
                account = _create_account(session, public, plan_players, backend_keys)
        except LedgerError as exc:
            _fail(session, None, f"the account could not be recorded: {exc.message}")
            return
    else:
        account = session.account
        _next_generation(ThresholdKey.objects.select_for_update().get(account=account), public, plan_players, backend_keys)
    _mark_completed(session, account, public)
