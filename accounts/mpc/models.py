"""Records of threshold keys (docs/threshold-signing.md): the group key of a DKG account and
its players' shares, key-generation and refresh sessions, signing sessions and the backend
players' nonces. Imported by accounts/models.py, so they belong to the accounts app.

No secret is ever a plain column: a backend player's share, DKG state and signing nonces
are sealed under that player's own key (accounts/mpc/keyring.py) in a JSON column.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ledger_project.fields import JSONField
from tenancy.scoping import TenantOwnedModel


class ThresholdKey(models.Model):
    """The key of a DKG account: its group public key (the account's address), t of n, the
    current generation of its shares (a refresh moves to the next), and the spec's keyUsage
    and isDefault as given. ``public_key_package`` is the frost-public-key-package of the
    current generation (every player's verifying share)."""

    account = models.OneToOneField("accounts.Account", on_delete=models.CASCADE, related_name="threshold_key")
    group_public_key = models.CharField(max_length=64, unique=True, help_text="hex")
    threshold = models.PositiveSmallIntegerField()
    key_usage = models.CharField(max_length=64, blank=True)
    is_default = models.BooleanField(default=False)
    generation = models.PositiveIntegerField(default=1)
    public_key_package = JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.threshold}-of-{len(self.public_key_package.get('verifyingShares', {}))} key of {self.account_id}"


class ThresholdShare(models.Model):
    """One player's share of a key, per generation. A backend player's signing share is
    sealed under its own key (``sealed``, kek id inside); an external player's row holds its
    verifying share only — the share itself never reaches the service."""

    key = models.ForeignKey(ThresholdKey, on_delete=models.CASCADE, related_name="shares")
    player_code = models.CharField(max_length=64)
    identifier = models.PositiveIntegerField()
    generation = models.PositiveIntegerField()
    backend = models.BooleanField()
    verifying_share = models.CharField(max_length=64, help_text="hex")
    api_keys = JSONField(default=list, blank=True, help_text="External player: the API keys that may speak for it (empty: any key of the organization).")
    sealed = JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key", "generation", "identifier"]
        constraints = [
            models.UniqueConstraint(fields=["key", "player_code", "generation"], name="threshold_share_unique_player"),
            models.UniqueConstraint(fields=["key", "identifier", "generation"], name="threshold_share_unique_identifier"),
            models.CheckConstraint(condition=Q(backend=True, sealed__isnull=False) | Q(backend=False, sealed__isnull=True),
                                   name="threshold_share_sealed_iff_backend", violation_error_message="Backend shares are sealed; external ones are not held."),
        ]

    def __str__(self) -> str:
        return f"share {self.identifier} ({self.player_code}) gen {self.generation}"


class DkgKind(models.TextChoices):
    DKG = "DKG"
    REFRESH = "REFRESH"


class DkgStatus(models.TextChoices):
    ROUND1 = "ROUND1"  # waiting for round-1 packages
    ROUND2 = "ROUND2"  # waiting for round-2 packages (encrypted shares)
    FINISHING = "FINISHING"  # waiting for every player to check its shares and confirm the group key
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class DkgSession(TenantOwnedModel):
    """A key generation (Create Account with dkgKeys) or a share refresh among players.

    DKG: ``account_data`` is the validated New account definition and ``account_offchain_id``
    the id the account gets when the session completes (the account record exists from
    then: ACTIVE, its address the group key). REFRESH: ``account`` is the account whose key
    moves to the next generation. A failure names the player at fault (``culprit_code``)."""

    kind = models.CharField(max_length=10, choices=DkgKind.choices)
    status = models.CharField(max_length=10, choices=DkgStatus.choices, default=DkgStatus.ROUND1, db_index=True)
    threshold = models.PositiveSmallIntegerField()
    account_data = JSONField(default=dict, blank=True)
    account_offchain_id = models.UUIDField(null=True, blank=True)
    account = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    key_usage = models.CharField(max_length=64, blank=True)
    is_default = models.BooleanField(default=False)
    created_by_key = models.ForeignKey("tenancy.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    request_id = models.UUIDField(null=True, blank=True)
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    culprit_code = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.offchain_id} [{self.status}]"

    @property
    def session_id(self) -> str:
        return str(self.offchain_id)


class DkgPlayer(models.Model):
    """A player of a key-generation or refresh session and the messages it sent. A backend
    player's protocol state is sealed under its key (``sealed_state``: frost-dkg-state, then
    its key package once it finished); an external player keeps its own."""

    session = models.ForeignKey(DkgSession, on_delete=models.CASCADE, related_name="players")
    player_code = models.CharField(max_length=64)
    identifier = models.PositiveIntegerField()
    backend = models.BooleanField()
    api_keys = JSONField(default=list, blank=True)
    round1 = JSONField(null=True, blank=True)
    round2 = JSONField(null=True, blank=True)
    sealed_state = JSONField(null=True, blank=True)
    public_key_package = JSONField(null=True, blank=True)
    finished = models.BooleanField(default=False)

    class Meta:
        ordering = ["session", "identifier"]
        constraints = [
            models.UniqueConstraint(fields=["session", "player_code"], name="dkg_player_unique_code"),
            models.UniqueConstraint(fields=["session", "identifier"], name="dkg_player_unique_identifier"),
        ]

    def __str__(self) -> str:
        return f"{self.player_code} ({self.identifier})"


class SigningStatus(models.TextChoices):
    COMMITTING = "COMMITTING"  # waiting for round-one commitments
    SIGNING = "SIGNING"  # signing package fixed, waiting for partial signatures
    COMPLETED = "COMPLETED"  # aggregated; the signature is the transaction's
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"


SIGNING_OPEN = (SigningStatus.COMMITTING, SigningStatus.SIGNING)


class SigningSession(TenantOwnedModel):
    """A FROST signing session of one transaction by one DKG account (``sessionId`` is its
    offchain id): the chosen players, their commitments, the signing package fixed once
    every commitment is in, the partial signatures verified as they arrive, and the
    aggregated Ed25519 signature, added to the transaction like any other signer's."""

    transaction = models.ForeignKey("transactions.Transaction", on_delete=models.CASCADE, related_name="+")
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="+")
    key = models.ForeignKey(ThresholdKey, on_delete=models.CASCADE, related_name="signing_sessions")
    generation = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=SigningStatus.choices, default=SigningStatus.COMMITTING, db_index=True)
    package = JSONField(null=True, blank=True)
    package_digest = models.CharField(max_length=64, blank=True)
    signature = models.CharField(max_length=100, blank=True)
    created_by_key = models.ForeignKey("tenancy.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"signing {self.offchain_id} [{self.status}]"

    @property
    def session_id(self) -> str:
        return str(self.offchain_id)


class SigningPlayer(models.Model):
    """A chosen player of a signing session: its public commitment and partial signature."""

    session = models.ForeignKey(SigningSession, on_delete=models.CASCADE, related_name="players")
    player_code = models.CharField(max_length=64)
    identifier = models.PositiveIntegerField()
    backend = models.BooleanField()
    api_keys = JSONField(default=list, blank=True)
    hiding = models.CharField(max_length=64, blank=True)
    binding = models.CharField(max_length=64, blank=True)
    signature_share = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["session", "identifier"]
        constraints = [models.UniqueConstraint(fields=["session", "player_code"], name="signing_player_unique_code")]

    @property
    def committed(self) -> bool:
        return bool(self.hiding)


class NonceStatus(models.TextChoices):
    FRESH = "FRESH"
    CONSUMED = "CONSUMED"


class SigningNonce(models.Model):
    """A backend player's round-one nonces for one session, consumed once
    (docs/threshold-signing.md, "Nonce storage"): inserted and committed before the
    commitment is published (one row per session and player, so a retried commit publishes
    the same one); consumed by a conditional UPDATE (FRESH → CONSUMED, with the package
    digest and the share, the sealed nonces erased) in the same database transaction that
    records the share. A FRESH row past ``expires_at`` is deleted (unused nonces are safe to
    drop)."""

    session = models.ForeignKey(SigningSession, on_delete=models.CASCADE, related_name="nonces")
    player_code = models.CharField(max_length=64)
    identifier = models.PositiveIntegerField()
    hiding = models.CharField(max_length=64)
    binding = models.CharField(max_length=64)
    sealed = JSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=NonceStatus.choices, default=NonceStatus.FRESH)
    package_digest = models.CharField(max_length=64, blank=True)
    signature_share = models.CharField(max_length=64, blank=True)
    expires_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "player_code"], name="signing_nonce_once_per_player"),
            models.CheckConstraint(condition=Q(status="FRESH", sealed__isnull=False, package_digest="") | Q(status="CONSUMED", sealed__isnull=True) & ~Q(package_digest=""),
                                   name="signing_nonce_consumed_once", violation_error_message="Fresh nonces are sealed; consumed ones name their package and are erased."),
        ]

    def __str__(self) -> str:
        return f"nonces of {self.player_code} for {self.session_id} [{self.status}]"
