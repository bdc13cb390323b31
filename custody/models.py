"""Custody: the keys the service holds (docs/custody.md).

The table keeps the name it had when custody lived in the accounts app
(``accounts_managedkey``): moving the model moved no data.
"""

from __future__ import annotations

from django.db import models


class KeyLocation(models.TextChoices):
    # Spec privateKeyDetails.location values.
    DATABASE = "DATABASE"
    SECRETS = "SECRETS"


class ManagedKey(models.Model):
    """An Ed25519 private key the service holds, envelope-encrypted (custody/services.py).

    The row never holds usable key material: the secret key is AES-256-GCM encrypted under
    a per-key data key, which is itself wrapped by the master key (``master_key_id`` names
    it; the master key is never in the database). For location SECRETS the ciphertext is in
    a file under LEDGER_SECRETS_DIR and ``secret_ref`` names it.
    """

    public_key = models.CharField(max_length=44, unique=True)
    location = models.CharField(max_length=10, choices=KeyLocation.choices, default=KeyLocation.DATABASE)
    master_key_id = models.CharField(max_length=16, db_index=True)
    wrap_nonce = models.BinaryField(max_length=12)
    wrapped_dek = models.BinaryField(max_length=48)
    key_nonce = models.BinaryField(max_length=12, blank=True)
    ciphertext = models.BinaryField(max_length=80, blank=True)
    secret_ref = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "accounts_managedkey"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(location="DATABASE", secret_ref="") | models.Q(location="SECRETS") & ~models.Q(secret_ref=""),
                name="managed_key_location_matches_storage",
                violation_error_message="DATABASE keys keep their ciphertext in the row; SECRETS keys name their file.",
            ),
        ]

    def __str__(self) -> str:
        return f"managed key {self.public_key}"

    def __repr__(self) -> str:
        return f"<ManagedKey {self.public_key} {self.location}>"
