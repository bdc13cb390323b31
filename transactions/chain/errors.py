"""Chain errors, mapped onto the API error model (docs/errors.md, Chain)."""

from __future__ import annotations

from ledger_project.api.errors import LedgerError, ServiceUnavailableError


class ChainUnavailable(ServiceUnavailableError):
    """The cluster's RPC endpoint does not answer (connection refused, timeout)."""

    code = "CHAIN_UNAVAILABLE"
    default_message = "The cluster's RPC endpoint is unavailable; retry later."


class ChainRpcError(LedgerError):
    """The RPC node answered with an error we did not expect."""

    status_code = 500
    code = "CHAIN_RPC_ERROR"


class SimulationFailed(LedgerError):
    """Preflight simulation refused the transaction: a 400 carrying the program's reason."""

    code = "TRANSACTION_SIMULATION_FAILED"

    def __init__(self, reason: str, *, logs: list[str] | None = None, err: object = None):
        self.logs = logs or []
        self.err = err
        super().__init__(f"The network refused the transaction in simulation: {reason}")


class TransactionTooLarge(LedgerError):
    code = "TRANSACTION_TOO_LARGE"


class BlockhashExpired(LedgerError):
    code = "BLOCKHASH_EXPIRED"


def reason_from_logs(logs: list[str], err: object) -> str:
    """The most specific reason a failed simulation gives, preferring the program's own
    words: "Program log: Error: …", then a bare message line (the System program logs
    "Transfer: insufficient lamports …" that way), then the runtime's "… failed: …"."""
    logs = logs or []
    for line in reversed(logs):
        if line.startswith("Program log: Error: "):
            return line[len("Program log: "):]
    for line in reversed(logs):
        if not line.startswith("Program "):
            return line
    for line in reversed(logs):
        if line.startswith("Program log: ") and ("rror" in line or "nsufficient" in line):
            return line[len("Program log: "):]
    for line in reversed(logs):
        if " failed: " in line:
            return line.split(" failed: ", 1)[1]
    return str(err) if err is not None else "unknown error"
