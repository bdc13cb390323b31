"""Signing sessions of DKG accounts (docs/threshold-signing.md, "Signing a transaction").

One session signs one PARTIALLY_SIGNED transaction for one DKG account with the players
the caller chose (at least t): backend players commit in the worker, external players send
their commitment through the API; once every commitment is in, the signing package is
fixed (the transaction's message and the sorted commitments). Backend players then sign in
the worker — each nonce consumed once, by a conditional UPDATE in the very database
transaction that records the share, so a worker killed at any point resumes without ever
signing two packages with one nonce — and external players' partial signatures arrive with
Sign Transaction (``dkgSigning``), each verified on arrival (a bad one is refused naming its
player). When every share is in, they are aggregated into one Ed25519 signature that is
added to the transaction like any other signer's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db_transaction
from django.utils import timezone
from solders.pubkey import Pubkey

from ledger_project.api.envelope import canonical_uuid
from ledger_project.api.errors import ConflictError, LedgerError, NotFoundError
from chain.errors import ChainError
from tenancy.idempotency import write_phase
from tenancy.scoping import worker_only
from transactions.models import Transaction, TransactionStatus
from transactions.collecting import not_signable, signer_check, takes_signatures, transaction_add_signatures

from ..signers import ensure_usable
from threshold import frost
from threshold import group as G
from threshold import messages as M
from threshold import signing as S
from . import keyring
from .common import invalid, kick, parse, player_may_speak, unseal_key_package
from .models import NonceStatus, SigningNonce, SigningPlayer, SigningSession, SigningStatus, SIGNING_OPEN, ThresholdKey, ThresholdShare
from .purposes import nonce_purpose, share_purpose_of


def threshold_key_of(account, *, field: str) -> ThresholdKey:
    key = ThresholdKey.objects.filter(account=account).first()
    if key is None:
        raise LedgerError("This account has no threshold key (dkgKeys): sign with its key or signature instead.", field=field, code="NOT_A_DKG_ACCOUNT")
    return key


def _backend_key(session: SigningSession, code: str):
    share = ThresholdShare.objects.get(key=session.key, player_code=code, generation=session.generation)
    purpose = share_purpose_of(session.key.group_public_key, code, share.identifier, share.generation)
    return unseal_key_package(code, share.sealed, purpose, verifying_share=share.verifying_share)


# --- opening a session (request) ---------------------------------------------------------------


def session_open(*, tenant, api_key, transaction, account, codes: list[str]) -> SigningSession:
    """Open Signing Session: ``codes`` (at least t players of the key's current shares)
    will sign ``transaction`` for ``account``; backend players among them commit at once in
    the worker."""
    key = threshold_key_of(account, field="itemData.account")
    ensure_usable(account, field="itemData.account")
    if not takes_signatures(transaction):
        raise not_signable(transaction)
    signer_check(transaction, account.address, field="itemData.account")
    if account.address in (transaction.signatures or {}):
        raise LedgerError(f"The transaction carries {account.address}'s signature already.", field="itemData.account", code="ALREADY_SIGNED")
    shares = {s.player_code: s for s in ThresholdShare.objects.filter(key=key, generation=key.generation)}
    for index, code in enumerate(codes):
        if code not in shares:
            raise LedgerError(f"{code} is not a player of this account's key (its players: {', '.join(sorted(shares))}).",
                              field=f"itemData.mpcPlayerCodes[{index}]", code="UNKNOWN_MPC_PLAYER")
    for index, code in enumerate(codes):
        if code in codes[:index]:
            raise LedgerError(f"Player {code} is named twice.", field=f"itemData.mpcPlayerCodes[{index}]", code="INVALID_MPC_PLAYERS")
    if len(codes) < key.threshold:
        raise LedgerError(f"This key signs with {key.threshold} players; {len(codes)} chosen.", field="itemData.mpcPlayerCodes", code="INVALID_MPC_PLAYERS")
    with write_phase():
        # Again under the transaction's row lock: a withdrawal may have committed meanwhile.
        locked = Transaction.objects.for_tenant(tenant).select_for_update().get(pk=transaction.pk)
        if not takes_signatures(locked):
            raise not_signable(locked)
        session = SigningSession.objects.for_tenant(tenant).create(
            tenant=tenant, cluster=transaction.cluster, transaction=transaction, account=account, key=key, generation=key.generation,
            created_by_key=api_key, expires_at=timezone.now() + timedelta(seconds=settings.LEDGER_MPC_SIGNING_SESSION_SECONDS),
        )
        chosen = sorted((shares[c] for c in codes), key=lambda s: s.identifier)
        SigningPlayer.objects.bulk_create([SigningPlayer(session=session, player_code=s.player_code, identifier=s.identifier, backend=s.backend,
                                                         api_keys=list(s.api_keys or [])) for s in chosen])
        if any(s.backend for s in chosen):
            kick(_advance_task(), session_pk=session.pk)
    return session


# --- external commitments (request) ------------------------------------------------------------


def _locked(session: SigningSession):
    session = SigningSession.objects.for_tenant(session.tenant).select_for_update().get(pk=session.pk)
    return session, list(session.players.select_for_update().order_by("identifier"))


def _closed(session: SigningSession, field: str) -> LedgerError:
    why = f": {session.error_message}" if session.error_message else ""
    return LedgerError(f"The signing session is {session.status}{why}.", field=field, code="SIGNING_SESSION_CLOSED")


def _external(players, code: str, api_key, field: str) -> SigningPlayer:
    player = next((p for p in players if p.player_code == code), None)
    if player is None:
        raise LedgerError(f"{code} is not a player of this signing session.", field=field, code="UNKNOWN_MPC_PLAYER")
    if player.backend:
        raise LedgerError(f"{code} is a backend player: the service commits and signs for it.", field=field, code="NOT_AN_EXTERNAL_PLAYER")
    player_may_speak(player.api_keys, api_key, code, field=field)
    return player


def commitment_submit(*, session: SigningSession, api_key, code: str, message: dict) -> SigningSession:
    """An external player's round-one commitment; the last one fixes the signing package."""
    field = "itemData.commitment"
    with write_phase():
        session, players = _locked(session)
        player = _external(players, code, api_key, "itemData.mpcPlayerCode")
        if session.status not in SIGNING_OPEN:
            raise _closed(session, "itemData.sessionId")
        commitment = parse(message, "frost-signing-commitment", field=field)
        if commitment.session_id != session.session_id:
            raise invalid("sessionId is not this session's.", field=f"{field}.sessionId")
        if commitment.commitment.identifier != player.identifier:
            raise invalid(f"Player {code} has identifier {player.identifier}.", field=f"{field}.identifier")
        hiding, binding = commitment.commitment.hiding.hex(), commitment.commitment.binding.hex()
        if player.committed:
            if (player.hiding, player.binding) != (hiding, binding):
                raise ConflictError(f"Player {code} committed already, to other nonces; a player commits once per session.", field=field, code="MPC_MESSAGE_CONFLICT")
            return session
        player.hiding, player.binding = hiding, binding
        player.save(update_fields=["hiding", "binding"])
        if all(p.committed for p in players):
            _fix_package(session, players)
        if any(p.backend for p in players):
            kick(_advance_task(), session_pk=session.pk)
    return session


def _fix_package(session: SigningSession, players) -> None:
    public = M.from_json(session.key.public_key_package)
    commitments = [S.SigningCommitment(session.session_id, frost.Commitment(p.identifier, bytes.fromhex(p.hiding), bytes.fromhex(p.binding))) for p in players]
    package = S.signing_package(session.session_id, public, bytes(session.transaction.message), commitments)
    session.package, session.package_digest, session.status = M.to_json(package), S.package_digest(package).hex(), SigningStatus.SIGNING
    session.save(update_fields=["package", "package_digest", "status", "updated_at"])


# --- partial signatures of Sign Transaction (transactions/signatures.py's DkgSigner) ----------------


@dataclass(frozen=True)
class Contribution:
    """Partial signatures verified in Sign Transaction's read phase, stored by its write phase."""

    tenant: object
    session_pk: int
    address: str
    shares: dict  # mpcPlayerCode → hex share


class DkgSigner:
    """Registered with the transaction engine (accounts/apps.py), which imports no area."""

    def check(self, *, tenant, cluster: str, api_key, transaction, entry: dict, field: str) -> Contribution | None:
        """Read phase: the session ``dkgSigning.sessionId`` names (this transaction's, this
        account's), and each partial signature verified against its player's commitment and
        verifying share. None: the session completed already (nothing new)."""
        from ..lookup import OffPlatform, resolve_account

        dkg, at = entry["dkgSigning"], f"{field}.dkgSigning"
        account = resolve_account(tenant, cluster, entry["account"], field=f"{field}.account")
        if isinstance(account, OffPlatform):  # pragma: no cover - resolve_account refuses it without allow_off_platform
            raise NotFoundError("No such account.", field=f"{field}.account")
        threshold_key_of(account, field=f"{field}.account")
        session_uuid = canonical_uuid(dkg["sessionId"])
        session = SigningSession.objects.for_tenant(tenant).filter(offchain_id=session_uuid).select_related("key").first() if session_uuid else None
        if session is None:
            raise NotFoundError("No such signing session.", field=f"{at}.sessionId")
        if session.transaction_id != transaction.pk or session.account_id != account.pk:
            raise LedgerError("This signing session signs another transaction or account.", field=f"{at}.sessionId", code="SESSION_MISMATCH")
        if session.status == SigningStatus.COMPLETED:
            return None
        if session.status not in SIGNING_OPEN:
            raise _closed(session, f"{at}.sessionId")
        players = {p.player_code: p for p in session.players.all()}
        if session.status == SigningStatus.COMMITTING:
            waiting = ", ".join(code for code, p in players.items() if not p.committed)
            raise LedgerError(f"The signing package is not fixed yet: waiting for the commitments of {waiting}.", field=f"{at}.sessionId", code="SIGNING_PACKAGE_NOT_READY")
        public, package = M.from_json(session.key.public_key_package), M.from_json(session.package)
        verified: dict[str, str] = {}
        for index, item in enumerate(dkg["partialSignatures"]):
            here = f"{at}.partialSignatures[{index}]"
            player = _external(list(players.values()), item["mpcPlayerCode"], api_key, f"{here}.mpcPlayerCode")
            if not _share_valid(public, package, player, item["partialSignature"]):
                raise LedgerError(f"The partial signature of player {player.player_code} does not verify against its commitment and verifying "
                                  "share for this signing package: refused, nothing stored.", field=f"{here}.partialSignature", code="INVALID_PARTIAL_SIGNATURE")
            verified[player.player_code] = item["partialSignature"]
        return Contribution(tenant, session.pk, account.address, verified)

    def record(self, contribution: Contribution) -> tuple[str, str] | None:
        """Write phase: store the shares; (address, signature) once the session has them all."""
        session = SigningSession.objects.for_tenant(contribution.tenant).select_for_update().get(pk=contribution.session_pk)
        if session.status == SigningStatus.COMPLETED:
            return contribution.address, session.signature
        if session.status != SigningStatus.SIGNING:
            raise _closed(session, "itemData.offPlatformSigning")
        for code, share in contribution.shares.items():
            SigningPlayer.objects.filter(session=session, player_code=code, signature_share="").update(signature_share=share)
        signature = _aggregate(session)
        return (contribution.address, signature) if signature else None

    def end_sessions(self, *, transaction, why: str) -> int:
        """Withdraw Transaction: every open session of ``transaction`` CANCELLED now (its
        unused nonces dropped), under the sessions' row locks in pk order; a backend step
        waiting on one of them then finds it closed, and an aggregate made just before is
        refused by the withdrawn transaction."""
        sessions = SigningSession.objects.for_tenant(transaction.tenant).select_for_update().filter(transaction=transaction, status__in=SIGNING_OPEN).order_by("pk")
        ended = 0
        for session in sessions:
            _close(session, SigningStatus.CANCELLED, why)
            ended += 1
        return ended

    def service_only(self, *, transaction) -> list[str]:
        """``transaction``'s missing signers whose signature nobody but the service can make:
        DKG accounts whose external players are fewer than t — so no t players sign without a
        backend player — in the only generation the key ever had (a refresh leaves the
        players it removed their old shares, which still sign under the same address), and
        with no session of this transaction COMPLETED for them (its aggregate is shown in
        the session's status)."""
        by_hex = {bytes(Pubkey.from_string(address)).hex(): address for address in transaction.missing_signers}
        found = []
        for key in ThresholdKey.objects.filter(group_public_key__in=list(by_hex), generation=1).order_by("pk"):
            if ThresholdShare.objects.filter(key=key, generation=1, backend=False).count() >= key.threshold:
                continue
            if SigningSession.objects.for_tenant(transaction.tenant).filter(transaction=transaction, key=key, status=SigningStatus.COMPLETED).exists():
                continue
            found.append(by_hex[key.group_public_key])
        return found


def _share_valid(public, package, player: SigningPlayer, text: str) -> bool:
    try:
        share = G.decode_scalar(bytes.fromhex(text))
    except (ValueError, G.EncodingError):
        return False
    return S.verify_share(public, package, S.SignatureShare(package.session_id, player.identifier, share))


def _aggregate(session: SigningSession) -> str | None:
    """The Ed25519 signature once every chosen player's share is in (under the session's
    row lock); None before. Every share was verified when it arrived; aggregation verifies
    them again and the signature against the group key."""
    players = list(session.players.order_by("identifier"))
    if any(not p.signature_share for p in players):
        return None
    public, package = M.from_json(session.key.public_key_package), M.from_json(session.package)
    shares = [S.SignatureShare(session.session_id, p.identifier, bytes.fromhex(p.signature_share)) for p in players]
    signature = M.base58(S.aggregate(public, package, shares).signature)
    session.signature, session.status, session.completed_at = signature, SigningStatus.COMPLETED, timezone.now()
    session.save(update_fields=["signature", "status", "completed_at", "updated_at"])
    return signature


# --- backend players (worker) ----------------------------------------------------------------------


def _advance_task():
    from ..tasks import mpc_signing_advance

    return mpc_signing_advance


def _close(session: SigningSession, status: str, why: str) -> None:
    session.status, session.error_message = status, why
    session.save(update_fields=["status", "error_message", "updated_at"])
    SigningNonce.objects.filter(session=session, status=NonceStatus.FRESH).delete()  # unused nonces: always safe to drop


@worker_only  # the worker's steps: the session was resolved through a scoped door when it was opened
def signing_advance(*, session_pk: int, steps: int = 32) -> str:
    """The backend players' next steps, one committed database transaction each, until the
    session waits for an external player or ends. Returns its status."""
    for _ in range(steps):
        with db_transaction.atomic():
            # The session's row only (of=self): the transaction and account rows are read, not locked here.
            session = SigningSession.unscoped.select_for_update(of=("self",)).select_related("key", "transaction", "account").get(pk=session_pk)
            if session.status not in SIGNING_OPEN:
                return session.status
            tx = session.transaction
            if session.expires_at <= timezone.now():
                _close(session, SigningStatus.EXPIRED, f"it was not completed within {settings.LEDGER_MPC_SIGNING_SESSION_SECONDS} s")
                return session.status
            if not takes_signatures(tx) or session.account.address in (tx.signatures or {}):
                _close(session, SigningStatus.CANCELLED, f"the transaction is {tx.status} and no longer waits for this account's signature")
                return session.status
            if session.generation != session.key.generation:
                _close(session, SigningStatus.CANCELLED, "the key's shares were refreshed: open a new signing session")
                return session.status
            players = list(session.players.select_for_update().order_by("identifier"))
            if not _step(session, players):
                return session.status
    return SigningSession.unscoped.get(pk=session_pk).status


def _step(session: SigningSession, players: list[SigningPlayer]) -> bool:
    if session.status == SigningStatus.COMMITTING:
        todo = next((p for p in players if p.backend and not p.committed), None)
        if todo is not None:
            _backend_commit(session, todo)
            return True
        if all(p.committed for p in players):
            _fix_package(session, players)
            return True
        return False
    todo = next((p for p in players if p.backend and not p.signature_share), None)
    if todo is not None:
        _backend_sign(session, todo)
        return session.status == SigningStatus.SIGNING
    signature = _aggregate(session)
    if signature:
        try:
            with db_transaction.atomic():
                transaction_add_signatures(transaction=session.transaction, signatures={session.account.address: signature})
        except (LedgerError, ChainError) as exc:
            session.error_message = f"The signature was made but the transaction did not take it: {exc.message}"
            session.save(update_fields=["error_message"])
    return False


def _backend_commit(session: SigningSession, player: SigningPlayer) -> None:
    """Round one of a backend player: fresh nonces, sealed and stored with their commitment
    in this step's transaction, before the commitment is visible to anyone."""
    nonces = S.commit(_backend_key(session, player.player_code), session.session_id)
    commitment = nonces.nonces.commitment
    row = SigningNonce(session=session, player_code=player.player_code, identifier=player.identifier, hiding=commitment.hiding.hex(),
                       binding=commitment.binding.hex(), expires_at=session.expires_at)
    row.sealed = keyring.seal(player.player_code, json.dumps(M.to_json(nonces)).encode(), nonce_purpose(row))
    row.save()
    player.hiding, player.binding = row.hiding, row.binding
    player.save(update_fields=["hiding", "binding"])


def _backend_sign(session: SigningSession, player: SigningPlayer) -> None:
    """Round two of a backend player: its share of the fixed package. The nonce row is
    consumed (FRESH → CONSUMED with the package digest and the share, the nonces erased) by a
    conditional UPDATE in the transaction that records the share: a crash before the commit
    leaves the nonces fresh and nothing signed; after it, the share is recorded. A consumed
    nonce answers only the package it signed."""
    nonce = SigningNonce.objects.select_for_update().get(session=session, player_code=player.player_code)
    if nonce.status == NonceStatus.CONSUMED:
        if nonce.package_digest != session.package_digest:
            _close(session, SigningStatus.FAILED, f"the nonces of {player.player_code} already signed another package (NONCE_ALREADY_USED)")
            return
        share = nonce.signature_share
    else:
        nonces = M.from_json(json.loads(keyring.unseal(player.player_code, nonce.sealed, nonce_purpose(nonce))), "frost-signing-nonces")
        package = M.from_json(session.package)
        share = S.sign(_backend_key(session, player.player_code), nonces, package).share.hex()
        consumed = SigningNonce.objects.filter(pk=nonce.pk, status=NonceStatus.FRESH).update(
            status=NonceStatus.CONSUMED, package_digest=session.package_digest, signature_share=share, sealed=None, consumed_at=timezone.now())
        if consumed != 1:  # pragma: no cover - the row lock above excludes a concurrent consumer
            raise RuntimeError("a backend nonce was consumed concurrently")
    public, package = M.from_json(session.key.public_key_package), M.from_json(session.package)
    if not _share_valid(public, package, player, share):
        _close(session, SigningStatus.FAILED, f"the share of backend player {player.player_code} does not verify (its stored share is damaged)")
        return
    player.signature_share = share
    player.save(update_fields=["signature_share"])


@worker_only  # beat and worker start: every tenant's sessions
def sessions_sweep(*, quiet_seconds: float = 2.0) -> dict:
    """Sessions to resume — backend work left (a worker died, a broker lost a kick), past
    their expiry, or whose transaction stopped waiting — and unused nonces past their expiry
    dropped. Sessions waiting for an external player only are left alone."""
    from django.db.models import Exists, OuterRef, Q

    from .keygen import OPEN
    from .models import DkgPlayer, DkgSession, DkgStatus

    now = timezone.now()
    dropped, _ = SigningNonce.objects.filter(status=NonceStatus.FRESH, expires_at__lte=now).delete()
    quiet = now - timedelta(seconds=quiet_seconds)  # sessions a step just moved are left to their kick

    def players(model, **lookups):
        return Exists(model.objects.filter(session=OuterRef("pk"), **lookups))

    committing = Q(status=SigningStatus.COMMITTING) & (players(SigningPlayer, backend=True, hiding="") | ~players(SigningPlayer, hiding=""))
    signing_left = Q(status=SigningStatus.SIGNING) & (players(SigningPlayer, backend=True, signature_share="") | ~players(SigningPlayer, signature_share=""))
    signing = SigningSession.unscoped.filter(status__in=SIGNING_OPEN, updated_at__lte=quiet).filter(
        Q(expires_at__lte=now) | ~Q(transaction__status=TransactionStatus.PARTIALLY_SIGNED) | Q(transaction__withdrawn_at__isnull=False) | committing | signing_left)
    rounds = Q()
    for status, field in ((DkgStatus.ROUND1, "round1__isnull"), (DkgStatus.ROUND2, "round2__isnull")):
        rounds |= Q(status=status) & (players(DkgPlayer, backend=True, **{field: True}) | ~players(DkgPlayer, **{field: True}))
    rounds |= Q(status=DkgStatus.FINISHING) & (players(DkgPlayer, backend=True, finished=False) | ~players(DkgPlayer, finished=False))
    keygen = DkgSession.unscoped.filter(status__in=OPEN, updated_at__lte=quiet).filter(Q(expires_at__lte=now) | rounds)
    return {"signing": list(signing.values_list("pk", flat=True)), "keygen": list(keygen.values_list("pk", flat=True)), "noncesDropped": dropped}
