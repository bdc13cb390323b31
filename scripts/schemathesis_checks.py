"""Checks the project's schemathesis run adds to schemathesis's own (docs/api.md,
"schemathesis"): every error code is documented with its status, a schema-valid request is
refused 400 only for a rule the schema cannot state, and no answer carries a platform
signature outside the fee-payer slot (docs/custody.md, "Platform keys"). Registered when
scripts/schemathesis_hooks.py imports this module."""

from __future__ import annotations

from functools import lru_cache

import schemathesis

from scripts.schemathesis_hooks import ROOT, _seed


# --- checks: docs/errors.md decides the statuses ----------------------------------------------

def documented_codes(text: str) -> set[tuple[int, str]]:
    """(status, code) pairs of docs/errors.md's tables: ``| 400 | `A`, `B` / `C` | … |``."""
    import re

    pairs = set()
    for line in text.splitlines():
        match = re.match(r"^\|\s*(\d{3})\s*\|([^|]*)\|", line)
        if match:
            pairs |= {(int(match.group(1)), code) for code in re.findall(r"`([A-Z][A-Z0-9_]*)`", match.group(2))}
    return pairs


@lru_cache(maxsize=1)
def _documented() -> set[tuple[int, str]]:
    return documented_codes((ROOT / "docs" / "errors.md").read_text(encoding="utf-8"))


#: codes saying that the request breaks its schema (docs/errors.md): a request the OpenAPI
#: admits must never get them. Every other 400 code of docs/errors.md names a rule the
#: schema cannot state — the state of a record (ALREADY_PAUSED, ACCOUNT_INACTIVE), the
#: network (SEED_BELOW_RENT, TRANSACTION_SIMULATION_FAILED), who pays
#: (FUNDING_ACCOUNT_REQUIRED) — which a schema-valid request may break.
AS_IF_INVALID = frozenset({
    "MALFORMED_JSON", "NESTING_TOO_DEEP", "TOO_MANY_ITEMS", "TOO_MANY_KEYS", "TOO_LARGE", "REQUIRED", "INVALID",
    "INVALID_TYPE", "INVALID_ENUM", "OUT_OF_RANGE", "TOO_LONG", "TOO_SHORT", "TOO_MANY_ERRORS", "UNKNOWN_FIELD",
    "INVALID_REQUEST_ID", "BAD_REQUEST", "INVALID_CLUSTER", "INVALID_ADDRESS", "INVALID_LOOKUP", "URL_NOT_ALLOWED",
})


def _error_codes(response) -> list[str] | None:
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - not JSON: response_schema_conformance reports it
        return None
    if not isinstance(body, dict) or not isinstance(body.get("errors"), list):
        return None
    return [e.get("code") for e in body["errors"] if isinstance(e, dict)]


def refused_as_invalid(status: int, codes: list[str] | None, documented: set[tuple[int, str]]) -> list[str]:
    """The codes of a 400 answer to a schema-valid request that call it invalid: the
    schema-shape codes, and any code docs/errors.md does not list for 400."""
    if status != 400 or codes is None:
        return []
    return sorted({c for c in codes if c in AS_IF_INVALID or (400, c) not in documented})


def undocumented(status: int, codes: list[str] | None, documented: set[tuple[int, str]]) -> list[str]:
    """Codes of an error answer that docs/errors.md does not list with its status."""
    if status < 400 or codes is None:
        return []
    return sorted({c for c in codes if (status, c) not in documented})


@schemathesis.check
def valid_request_not_refused_as_invalid(ctx, response, case):
    """A schema-valid request may be refused 400 only for a rule docs/errors.md lists that
    the schema cannot state (schemathesis.toml lets positive_data_acceptance take 400s)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    codes = refused_as_invalid(response.status_code, _error_codes(response), _documented())
    if codes:
        raise AssertionError(f"A schema-valid request was refused as invalid: {', '.join(codes)}")
    return None


@schemathesis.check
def error_codes_documented(ctx, response, case):
    """Every error code the API answers is listed in docs/errors.md with that status."""
    codes = undocumented(response.status_code, _error_codes(response), _documented())
    if codes:
        raise AssertionError(f"{response.status_code} with codes docs/errors.md does not list for it: {', '.join(codes)}")
    return None


# --- platform keys sign only as fee payer (docs/custody.md, "Platform keys") ------------------


def _messages(node):
    """Every serializedMessage (base64) in an answer."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "serializedMessage" and isinstance(value, str):
                yield value
            else:
                yield from _messages(value)
    elif isinstance(node, list):
        for value in node:
            yield from _messages(value)


def platform_misuse(message_b64: str, platform: set[str]) -> str | None:
    """Why a message misuses a platform address: it is a signer beyond the fee-payer slot,
    or any instruction names it as a signer or writable account. None when it does not."""
    import base64

    from solders.message import from_bytes_versioned

    message = from_bytes_versioned(base64.b64decode(message_b64))
    header = message.header
    keys = [str(k) for k in message.account_keys]
    signers = header.num_required_signatures
    writable = {i for i in range(len(keys)) if i < signers - header.num_readonly_signed_accounts or signers <= i < len(keys) - header.num_readonly_unsigned_accounts}
    for index, key in enumerate(keys):
        if key not in platform:
            continue
        if 0 < index < signers:
            return f"{key} signs beyond the fee-payer slot"
        for ix in message.instructions:
            if index in bytes(ix.accounts) and (index < signers or index in writable):
                return f"an instruction names the platform address {key} as a signer or writable account"
    return None


@schemathesis.check
def platform_keys_sign_only_as_fee_payer(ctx, response, case):
    """No transaction the service builds carries a platform signature over anything but its
    fee: a platform address is the fee payer (account 0) or absent from the instructions."""
    seed = _seed()
    platform = set((seed or {}).get("platform", {}).values())
    if not platform or response.status_code >= 400:
        return None
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - not JSON: another check reports it
        return None
    for message in _messages(body):
        why = platform_misuse(message, platform)
        if why:
            raise AssertionError(f"A platform key would sign outside its role: {why}")
    return None

