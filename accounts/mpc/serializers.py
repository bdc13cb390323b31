"""API shapes of threshold keys: the DKG and signing-session endpoints, and the FROST JSON
messages they carry (docs/threshold-signing.md, "Message formats"), described exactly in
the OpenAPI so that a client can build them; their cryptographic checks are the
services' (400 INVALID_MESSAGE naming the field)."""

from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer, OwnLookupSerializer, StrictCharField, StrictIntegerField, StrictSerializer, StrictUUIDField
from ledger_project.timestamps import timestamp_text
from transactions.serializers import TransactionIdentifier

from threshold import frost
from threshold import messages as M
from threshold import signing as S
from .models import DkgKind, DkgStatus, SigningStatus

CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"


@extend_schema_field({"type": "string", "pattern": CODE_PATTERN, "maxLength": 64})
class MpcPlayerCodeField(StrictCharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(CODE_PATTERN, message="An mpcPlayerCode is 1-64 letters, digits and _ . : - (starting with a letter or digit)."))


# --- FROST messages (threshold/messages.py, version 1) --------------------------------

_HEX32 = {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "32 bytes, lowercase hex"}
_B64 = {"type": "string", "pattern": "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", "description": "standard base64"}
_SESSION = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"}
_ID = {"type": "integer", "minimum": 1, "maximum": 65535}


def _message(types: list[str], required: list[str], properties: dict, description: str) -> dict:
    return {
        "type": "object", "description": description,
        "required": ["type", "version", "ciphersuite", *required],
        "properties": {"type": {"type": "string", "enum": types}, "version": {"type": "integer", "enum": [M.VERSION]},
                       "ciphersuite": {"type": "string", "enum": [M.CIPHERSUITE]}, **properties},
    }


ROUND1 = _message(["frost-dkg-round1", "frost-refresh-round1"], ["sessionId", "identifier", "threshold", "participants", "commitment", "encryptionKey"], {
    "sessionId": _SESSION, "identifier": _ID, "threshold": {"type": "integer", "minimum": 2, "maximum": 65535},
    "participants": {"type": "array", "items": _ID, "minItems": 2}, "commitment": {"type": "array", "items": _HEX32, "minItems": 1},
    "encryptionKey": _HEX32, "proofOfKnowledge": {"type": "string", "pattern": "^[0-9a-f]{128}$", "description": "frost-dkg-round1 only: R || mu"},
    "groupPublicKey": {**_HEX32, "description": "frost-refresh-round1 only"},
}, "A round-1 package (broadcast): Feldman commitment, X25519 key, proof of knowledge (key generation) or the group key (refresh).")
ROUND2 = _message(["frost-dkg-round2", "frost-refresh-round2"], ["sessionId", "sender", "recipient", "encryptedShare"], {
    "sessionId": _SESSION, "sender": _ID, "recipient": _ID, "encryptedShare": _B64,
}, "A round-2 package: the sender's share for the recipient, encrypted to it (NaCl Box nonce || ciphertext).")
PUBLIC_KEY_PACKAGE = _message(["frost-public-key-package"], ["threshold", "groupPublicKey", "verifyingShares"], {
    "threshold": {"type": "integer", "minimum": 1}, "groupPublicKey": _HEX32, "address": {"type": "string", "description": "base58 of groupPublicKey"},
    "verifyingShares": {"type": "object", "additionalProperties": _HEX32, "description": "identifier (decimal text) → verifying share"},
}, "The group info: group key, threshold, every player's verifying share.")
COMPLAINT = _message(["frost-dkg-complaint"], ["sessionId", "kind", "accuser", "accused", "encryptionSecretKey", "round2Package"], {
    "sessionId": _SESSION, "kind": {"type": "string", "enum": ["dkg", "refresh"]}, "accuser": _ID, "accused": _ID,
    "encryptionSecretKey": _HEX32, "round2Package": ROUND2,
}, "A verifiable complaint about a received share (reveals the accuser's round-2 X25519 key of this session).")
COMMITMENT = _message(["frost-signing-commitment"], ["sessionId", "identifier", "hiding", "binding"], {
    "sessionId": _SESSION, "identifier": _ID, "hiding": _HEX32, "binding": _HEX32,
}, "A player's round-one commitment (hiding and binding nonce commitments).")
_COMMITMENT_ITEM = {"type": "object", "required": ["identifier", "hiding", "binding"], "properties": {"identifier": _ID, "hiding": _HEX32, "binding": _HEX32}}
SIGNING_PACKAGE = _message(["frost-signing-package"], ["sessionId", "groupPublicKey", "message", "commitments"], {
    "sessionId": _SESSION, "groupPublicKey": _HEX32, "message": {**_B64, "description": "the bytes to sign: the transaction's serializedMessage"},
    "commitments": {"type": "array", "items": _COMMITMENT_ITEM},
}, "What every chosen player signs: the message and the commitments, sorted by identifier.")


def message_field(schema: dict):
    @extend_schema_field(schema)
    class MessageField(serializers.DictField):
        """A FROST JSON message; parsed and checked by the service."""

    return MessageField


Round1Field, Round2Field, PublicKeyPackageField = message_field(ROUND1), message_field(ROUND2), message_field(PUBLIC_KEY_PACKAGE)
ComplaintField, CommitmentField, SigningPackageField = message_field(COMPLAINT), message_field(COMMITMENT), message_field(SIGNING_PACKAGE)


# --- dkgKeys of the New account definition (accounts/serializers.py) -------------------------------


class ExternalPlayerSerializer(StrictSerializer):
    mpcPlayerCode = MpcPlayerCodeField(help_text="The external player's code (it runs `python -m threshold.player`).")
    apiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=20,
                                    help_text="API keys (key id or name) that may speak for this player; absent or empty: any key of the organization.")


class DkgSessionConfigSerializer(StrictSerializer):
    threshold = StrictIntegerField(min_value=2, max_value=64, help_text="t: any t of the players sign together (400 INVALID_THRESHOLD above their number).")
    externalPlayers = serializers.ListField(child=ExternalPlayerSerializer(), required=False, allow_null=True, max_length=64,
                                            help_text="Added here: the players outside the service; with useBackendPlayersCodes they make the n players.")


# --- requests ------------------------------------------------------------------------------------


class SessionRef(StrictSerializer):
    sessionId = StrictUUIDField()


class SessionInput(EnvelopeSerializer):
    itemData = SessionRef()


class PlayerMessage(SessionRef):
    mpcPlayerCode = MpcPlayerCodeField(help_text="The external player sending it.")


class DkgRound1Item(PlayerMessage):
    package = Round1Field()


class DkgRound1Input(EnvelopeSerializer):
    itemData = DkgRound1Item()


class DkgRound2Item(PlayerMessage):
    packages = serializers.ListField(child=Round2Field(), min_length=1, max_length=64, help_text="One package for each other player.")


class DkgRound2Input(EnvelopeSerializer):
    itemData = DkgRound2Item()


class DkgFinishItem(PlayerMessage):
    publicKeyPackage = PublicKeyPackageField(required=False, allow_null=True, help_text="The group info the player computed (dkg-finish); or complaint.")
    complaint = ComplaintField(required=False, allow_null=True, help_text="A complaint about a share the player received; the service decides it.")


class DkgFinishInput(EnvelopeSerializer):
    itemData = DkgFinishItem()


class DkgRefreshItem(StrictSerializer):
    account = OwnLookupSerializer()
    mpcPlayerCodes = serializers.ListField(child=MpcPlayerCodeField(), required=False, allow_null=True, min_length=2, max_length=64,
                                           help_text="Players of the refresh (default: every player); those left out are removed from the key.")


class DkgRefreshInput(EnvelopeSerializer):
    itemData = DkgRefreshItem()


class SigningOpenItem(StrictSerializer):
    transaction = TransactionIdentifier()
    account = OwnLookupSerializer(help_text="The DKG account whose signature the transaction needs.")
    mpcPlayerCodes = serializers.ListField(child=MpcPlayerCodeField(), min_length=1, max_length=64, help_text="The players who will sign: at least the key's threshold (400 INVALID_MPC_PLAYERS).")


class SigningOpenInput(EnvelopeSerializer):
    itemData = SigningOpenItem()


class SigningCommitItem(PlayerMessage):
    commitment = CommitmentField()


class SigningCommitInput(EnvelopeSerializer):
    itemData = SigningCommitItem()


# --- answers (schemas; render below writes them) ---------------------------------------------------


class IdsOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField(allow_null=True)


class DkgPlayerOutput(serializers.Serializer):
    mpcPlayerCode = serializers.CharField()
    identifier = serializers.IntegerField()
    backend = serializers.BooleanField()
    round1Sent = serializers.BooleanField(help_text="True once the player's round-1 package is in (and for every finished player).")
    round2Sent = serializers.BooleanField(help_text="True once the player's round-2 packages are in (and for every finished player).")
    finished = serializers.BooleanField()


class DkgSessionOutput(serializers.Serializer):
    sessionId = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=DkgKind.choices)
    status = serializers.ChoiceField(choices=DkgStatus.choices)
    threshold = serializers.IntegerField()
    account = IdsOutput(help_text="DKG: the account's offchainId (reserved) and, once completed, its address.")
    keyUsage = serializers.CharField()
    isDefault = serializers.BooleanField()
    players = DkgPlayerOutput(many=True)
    round1Packages = serializers.ListField(child=Round1Field())
    round2Packages = serializers.ListField(child=Round2Field(), help_text="Every round-2 package (each encrypted to its recipient).")
    publicKeyPackage = PublicKeyPackageField(allow_null=True, help_text="The group info the round-1 packages define, once all are in.")
    expiresAt = serializers.DateTimeField()
    completedAt = serializers.DateTimeField(allow_null=True)
    errorMessage = serializers.CharField(allow_blank=True)
    culprit = serializers.CharField(allow_null=True, help_text="The mpcPlayerCode at fault when the session failed because of a player.")


class SigningPlayerOutput(serializers.Serializer):
    mpcPlayerCode = serializers.CharField()
    identifier = serializers.IntegerField()
    backend = serializers.BooleanField()
    committed = serializers.BooleanField()
    partialSignatureReceived = serializers.BooleanField()


class SigningSessionOutput(serializers.Serializer):
    sessionId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SigningStatus.choices)
    transaction = IdsOutput()
    account = IdsOutput()
    threshold = serializers.IntegerField()
    groupPublicKey = serializers.CharField()
    generation = serializers.IntegerField()
    players = SigningPlayerOutput(many=True)
    commitments = serializers.ListField(child=CommitmentField())
    signingPackage = SigningPackageField(allow_null=True, help_text="Fixed once every chosen player committed: sign it (player `api-sign`).")
    signature = serializers.CharField(allow_null=True, help_text="The aggregated Ed25519 signature (base58), added to the transaction.")
    expiresAt = serializers.DateTimeField()
    completedAt = serializers.DateTimeField(allow_null=True)
    errorMessage = serializers.CharField(allow_blank=True)


def dkg_session_output(session) -> dict:
    from .keygen_public import session_public

    players = list(session.players.order_by("identifier"))
    public = None
    if session.status == DkgStatus.COMPLETED:
        public = next((M.from_json(p.public_key_package) for p in players if p.public_key_package), None)
    elif session.status != DkgStatus.FAILED:
        public = session_public(session, players)
    account_address = session.account.address if session.account_id else None
    account_id = session.account.offchain_id if session.account_id else session.account_offchain_id
    return {
        "sessionId": session.session_id, "kind": session.kind, "status": session.status, "threshold": session.threshold,
        "account": {"onchainId": account_address, "offchainId": str(account_id) if account_id else None},
        "keyUsage": session.key_usage, "isDefault": session.is_default,
        # A finished player sent both rounds, even where no package is kept: a session of
        # backend players only runs in memory in the request and stores none.
        "players": [{"mpcPlayerCode": p.player_code, "identifier": p.identifier, "backend": p.backend, "round1Sent": p.round1 is not None or p.finished,
                     "round2Sent": p.round2 is not None or p.finished, "finished": p.finished} for p in players],
        "round1Packages": [p.round1 for p in players if p.round1 is not None],
        "round2Packages": [m for p in players if p.round2 for m in p.round2],
        "publicKeyPackage": M.to_json(public) if public is not None else None,
        "expiresAt": timestamp_text(session.expires_at), "completedAt": timestamp_text(session.completed_at),
        "errorMessage": session.error_message, "culprit": session.culprit_code or None,
    }


def signing_session_output(session) -> dict:
    players = list(session.players.order_by("identifier"))
    tx = session.transaction
    commitments = [M.to_json(S.SigningCommitment(session.session_id, frost.Commitment(p.identifier, bytes.fromhex(p.hiding), bytes.fromhex(p.binding))))
                   for p in players if p.committed]
    return {
        "sessionId": session.session_id, "status": session.status,
        "transaction": {"onchainId": tx.onchain_id, "offchainId": str(tx.offchain_id)},
        "account": {"onchainId": session.account.address, "offchainId": str(session.account.offchain_id)},
        "threshold": session.key.threshold, "groupPublicKey": session.key.group_public_key, "generation": session.generation,
        "players": [{"mpcPlayerCode": p.player_code, "identifier": p.identifier, "backend": p.backend, "committed": p.committed,
                     "partialSignatureReceived": bool(p.signature_share)} for p in players],
        "commitments": commitments, "signingPackage": session.package, "signature": session.signature or None,
        "expiresAt": timestamp_text(session.expires_at), "completedAt": timestamp_text(session.completed_at), "errorMessage": session.error_message,
    }

