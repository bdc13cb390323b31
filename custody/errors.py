"""Errors of the accounts area."""

from ledger_project.api.errors import ConflictError, LedgerError


class CustodyError(LedgerError):
    """Key material cannot be used (tampered, missing, wrong master key)."""

    status_code = 500
    code = "KEY_CUSTODY_ERROR"


class InvalidPrivateKey(LedgerError):
    """An imported private key is malformed or does not match its public key."""

    code = "INVALID_PRIVATE_KEY"


class ManagedKeyExists(ConflictError):
    """An imported private key is already held by the service (docs/custody.md, Imports)."""

    code = "DUPLICATE_KEY"

    def __init__(self, public_key: str, message: str | None = None, **kwargs):
        self.public_key = public_key
        super().__init__(message or f"The service already holds the private key of {public_key}.", **kwargs)
