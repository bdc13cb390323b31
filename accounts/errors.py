"""Errors of the accounts area."""

from ledger_project.api.errors import LedgerError


class CustodyError(LedgerError):
    """Key material cannot be used (tampered, missing, wrong master key)."""

    status_code = 500
    code = "KEY_CUSTODY_ERROR"


class InvalidPrivateKey(LedgerError):
    """An imported private key is malformed or does not match its public key."""

    code = "INVALID_PRIVATE_KEY"
