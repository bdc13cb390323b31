"""The chain client's own errors (docs/errors.md, Chain).

Not HTTP: each carries a code, a message, the field it is about when the caller named one,
and, when the same call may succeed later, ``transient`` and ``retry_after``. What an error
means for an API answer (its status, its field in the request) is decided once, at the
API's door (tenancy/chain_errors.py, registered with the API's exception handler).
"""

from __future__ import annotations

import re
from typing import Callable


class ChainError(Exception):
    """Base of every error the chain client raises on purpose."""

    code = "CHAIN_ERROR"
    default_message = "The cluster refused the request."
    #: "not now": the same call may succeed later (an outage, a rate limit, a node behind)
    transient = False

    def __init__(self, message: str | None = None, *, field: str | None = None, code: str | None = None,
                 retry_after: int | None = None, extra: dict | None = None):
        self.message = message or self.default_message
        self.field = field
        if code:
            self.code = code
        self.retry_after = retry_after
        self.extra = extra or {}
        super().__init__(self.message)


class ChainRefused(ChainError):
    """The request names something the cluster does not have as asked: a cluster not
    configured, an account that is not a nonce account or lookup table, a message version
    that cannot carry what it was given. The caller's to correct (an API 400)."""


class ChainUnavailable(ChainError):
    """The cluster's RPC endpoint does not answer (connection refused, timeout, HTTP
    502/503/504) or answers that it cannot now (Agave's transient errors: -32005 node
    unhealthy, ...), and kept at it through the client's retries (chain/transport.py).
    A 503 with Retry-After: nothing was stored, the same request may be sent again."""

    code = "CHAIN_UNAVAILABLE"
    default_message = "The cluster's RPC endpoint is unavailable; retry later."
    transient = True

    def __init__(self, message: str | None = None, *, retry_after: int = 1, **kwargs):
        super().__init__(message, retry_after=retry_after, **kwargs)


class ChainBusy(ChainUnavailable):
    """The cluster's provider rate-limits the service (HTTP 429), or the service's own
    call budget for the cluster (LEDGER_RPC_BUDGETS) has nothing left within a short
    wait: 503 with Retry-After. A ChainUnavailable, so every worker path that waits out
    an outage waits this out too."""

    code = "CHAIN_BUSY"
    default_message = "The cluster's RPC endpoint is busy; retry later."


class ChainBehind(ChainUnavailable):
    """A read that must reflect a write the service knows of (it carries that write's slot
    as ``minContextSlot``) found only nodes that have not reached it (-32016 "Minimum
    context slot has not been reached"), through the client's retries and failover: 503
    with Retry-After. Nothing older than the write is ever used instead; nothing was stored.
    A ChainUnavailable, so every worker path that waits out an outage waits this out too."""

    code = "CHAIN_BEHIND"
    default_message = "The cluster's nodes have not reached the service's latest write yet; retry later."


class ChainRpcError(ChainError):
    """The RPC node answered with an error we did not expect (the service's trouble)."""

    code = "CHAIN_RPC_ERROR"
    default_message = "The cluster's RPC node answered with an unexpected error."


_ADDRESS = re.compile(r"(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{32,44}(?![1-9A-HJ-NP-Za-km-z])")
_NUMBER = re.compile(r"(?<![0-9A-Za-z])\d[\d,_]*(?![0-9A-Za-z])")


def scrubbed(reason: str) -> str:
    """A reason without addresses and amounts ("insufficient lamports 999580624240" →
    "insufficient lamports <amount>"); error codes such as 0x1 stay."""
    return _NUMBER.sub("<amount>", _ADDRESS.sub("<address>", reason))


class SimulationFailed(ChainError):
    """Preflight simulation refused the transaction, with the program's reason.

    The reason may quote an account's balance ("Transfer: insufficient lamports …"). The
    answer names the failing account and keeps its numbers only when that account is the
    caller's own (an account record of the acting tenant on the cluster, see
    ``caller_accounts`` — never the platform fee payer, another organization's shared
    account or a keyless off-platform signer): otherwise addresses and amounts are scrubbed (docs/errors.md, Chain). The full
    reason and logs stay in ``reason``/``logs`` for the operator's log.
    """

    code = "TRANSACTION_SIMULATION_FAILED"
    _PREFIX = "The network refused the transaction in simulation: "

    def __init__(self, reason: str, *, logs: list[str] | None = None, err: object = None, failing_account: str | None = None):
        self.reason = reason
        self.logs = logs or []
        self.err = err
        self.failing_account = failing_account
        super().__init__(self._PREFIX + scrubbed(reason) + " (in an account this request does not control)")

    def disclose_to(self, own: set[str]) -> None:
        """Show the full reason when the failing account is one of ``own``."""
        if self.failing_account is not None and self.failing_account in own:
            self.message = f"{self._PREFIX}{self.reason} (account {self.failing_account})"
            self.args = (self.message,)


class ProgramError(SimulationFailed):
    """A refusal in simulation by one of the project's own programs (docs/programs.md): a
    400 naming the program and its error from the ABI, e.g. "The loan_vault program refused
    the transaction in simulation: DestinationNotWhitelisted (custom program error 7137):
    the destination is not on the vault's whitelist." Its names carry no addresses or
    amounts, so the message is the same whoever asks."""

    code = "PROGRAM_ERROR"

    def __init__(self, failure, *, reason: str, logs: list[str] | None = None, err: object = None, failing_account: str | None = None):
        super().__init__(reason, logs=logs, err=err, failing_account=failing_account)
        self.failure = failure
        self.message = (f"The {failure.program} program refused the transaction in simulation: {failure.name} "
                        f"(custom program error {failure.code}): {failure.message}.")
        self.args = (self.message,)

    def disclose_to(self, own: set[str]) -> None:
        return None


_FailureReader = Callable[[str, list], object]
_failure_reader: _FailureReader | None = None


def register_failure_reader(reader: _FailureReader) -> None:
    """The engine says which failures are the project's programs' own
    (transactions/programs.py ``failure_from_logs``, registered by transactions/apps.py):
    it knows where each program is deployed; the client does not."""
    global _failure_reader
    _failure_reader = reader


def simulation_failure(cluster: str, logs: list[str], err: object, *, failing_account: str | None = None) -> SimulationFailed:
    """The exception for a refused simulation or preflight on ``cluster``: ProgramError when
    one of the project's programs refused it with its own error, else SimulationFailed."""
    reason = reason_from_logs(logs, err)
    failure = _failure_reader(cluster, logs) if _failure_reader is not None else None
    if failure is not None:
        return ProgramError(failure, reason=reason, logs=logs, err=err, failing_account=failing_account)
    return SimulationFailed(reason, logs=logs, err=err, failing_account=failing_account)


def failing_account(transaction, err: object) -> str | None:
    """The account a failed simulation is about: the fee payer for fee errors, else the
    first account of the failing instruction (the System program's funding account, a
    token program's source); None when it cannot be told."""
    try:
        message = transaction.message
        keys = [str(k) for k in message.account_keys]
        index = getattr(err, "index", None)
        if index is None:
            text = str(err)
            return keys[0] if ("Fee" in text or "AccountNotFound" in text) and keys else None
        accounts = bytes(message.instructions[index].accounts)
        return keys[accounts[0]] if accounts and accounts[0] < len(keys) else None
    except (AttributeError, IndexError, TypeError):
        return None


_OwnAddresses = Callable[..., set[str]]
_own_addresses: _OwnAddresses | None = None


def register_own_addresses(finder: _OwnAddresses) -> None:
    """The accounts area says which addresses are the acting tenant's own
    (accounts/apps.py): the chain client stands below every area and asks through this."""
    global _own_addresses
    _own_addresses = finder


def caller_accounts(*, tenant, cluster: str, candidates) -> set[str]:
    """Which of ``candidates`` are the acting tenant's own: addresses of its account
    records on ``cluster`` (its feePayer is one when it is the tenant's account), never a
    platform fee payer. A signer of the request is not enough: an off-platform signer whose
    key the service does not hold, or another organization's shared account, is not the
    caller's to read about. With no finder registered nothing is the caller's."""
    candidates = {str(c) for c in candidates if c}
    if tenant is None or not candidates or _own_addresses is None:
        return set()
    return _own_addresses(tenant=tenant, cluster=cluster, candidates=candidates)


class TransactionTooLarge(ChainError):
    """The message does not fit in a packet (1,232 bytes); ``extra["size"]`` says how big."""

    code = "TRANSACTION_TOO_LARGE"


_FRAME_END = re.compile(r"^Program \S+ (success|failed: )")
_FRAME_START = re.compile(r"^Program \S+ invoke \[")


def _failing_program_message(logs: list[str]) -> str | None:
    """The last message the failing program logged itself (Token-2022 logs "Transferring,
    minting, and burning is paused on this mint" without an "Error:" prefix): scanning
    back from the first "… failed: …" line to that program's invoke, skipping the frames of
    programs it invoked and its "Instruction: …" line."""
    failed = next((i for i, line in enumerate(logs) if line.startswith("Program ") and " failed: " in line), None)
    if failed is None:
        return None
    depth = 0
    for line in reversed(logs[:failed]):
        if _FRAME_END.match(line):
            depth += 1
        elif _FRAME_START.match(line):
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and line.startswith("Program log: ") and not line.startswith("Program log: Instruction: "):
            return line[len("Program log: "):]
    return None


def reason_from_logs(logs: list[str], err: object) -> str:
    """The most specific reason a failed simulation gives, preferring the program's own
    words: "Program log: Error: …", then a bare message line (the System program logs
    "Transfer: insufficient lamports …" that way), then the failing program's last own
    message, then the runtime's "… failed: …"."""
    logs = logs or []
    for line in reversed(logs):
        if line.startswith("Program log: Error: "):
            return line[len("Program log: "):]
    for line in reversed(logs):
        if not line.startswith("Program "):
            return line
    own = _failing_program_message(logs)
    if own:
        return own
    for line in reversed(logs):
        if line.startswith("Program log: ") and ("rror" in line or "nsufficient" in line):
            return line[len("Program log: "):]
    for line in reversed(logs):
        if " failed: " in line:
            return line.split(" failed: ", 1)[1]
    return str(err) if err is not None else "unknown error"
