"""The platform's own keys, and the one check every signature of the engine passes
(docs/custody.md, "Platform keys and the roles they sign in").

A key the platform holds for itself — a cluster's fee payer, the durable-nonce pool's
accounts and authorities, the program deployments' upgrade authorities and program keys,
and the addresses an operator lists in ``LEDGER_PLATFORM_ADDRESSES`` — signs a message
only in the roles the engine gave it: the fee-payer slot of a message the engine built,
the AdvanceNonceAccount of its own pool that the builder put first, and the instructions
of an operation the platform authored for itself (``grants``). ``engine_sign`` is the
only place the engine turns keys into signatures; it refuses, before any key is
decrypted, a message in which a platform address appears anywhere else: as a signer, in
an instruction it was not granted, or writable where the platform did not put it. So a
tenant that names the fee payer's public address in any field of any area (a recorded
account, a source, a destination, an authority) gets a 400 and nothing is signed, stored
or sent — whichever area built the message.

The same entry point holds the rule for keys shared between organizations
(``orgsAllowedToSignWithPrivateKey``): such a key signs for another organization only
when that organization's API key may debit it (the owner's ``networkCurrencyDebitApiKeys``
and ``tokenDebitApiKeys``), wherever the message debits it — the rule Sign Transaction
applied alone before.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

from django.conf import settings
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey

from ledger_project.api.errors import ForbiddenError, LedgerError
from tenancy.roles import api_key_may_debit

from chain.signing import sign_all

#: ``grants`` value of one address: every instruction of the message.
ALL_INSTRUCTIONS = None


class _Authored(dict):
    """``grants`` of a message the platform authored for itself (its nonce pool's create,
    advance and close; its program deployments): every platform address in every role."""


#: Pass as ``grants`` for the platform's own operations.
AUTHORED_BY_PLATFORM = _Authored()


class PlatformKeyRefused(LedgerError):
    """400: the message would have a platform key sign (or a platform account be written)
    in a role the engine did not give it."""

    code = "PLATFORM_KEY_NOT_ALLOWED"


class PlatformAddressNotAllowed(LedgerError):
    """400: a tenant names a platform address as an account of its own."""

    code = "PLATFORM_ADDRESS_NOT_ALLOWED"


# ---------------------------------------------------------------------------------------
# The registry: which addresses are the platform's own.


def _rows(address: str | None = None) -> dict[str, str]:
    """address → kind of every platform-held key (or of ``address`` alone, exactly)."""
    from .models import NonceAccount, NonceState, PlatformFeePayer, ProgramDeployment

    found: dict[str, str] = {}
    payers = PlatformFeePayer.objects.all()
    pool = NonceAccount.objects.filter(tenant__isnull=True)
    programs = ProgramDeployment.objects.all()
    if address is None:
        pool = pool.exclude(state=NonceState.CLOSED)  # gone from the chain: its keys never sign again
    else:
        payers = payers.filter(managed_key__public_key=address)
        pool = pool.filter(**{"address": address}) | NonceAccount.objects.filter(tenant__isnull=True, authority=address)
        programs = programs.filter(upgrade_authority_key__public_key=address) | ProgramDeployment.objects.filter(program_key__public_key=address)
    for key in payers.values_list("managed_key__public_key", flat=True):
        found[key] = "FEE_PAYER"
    for nonce, authority in pool.values_list("address", "authority"):
        found[nonce] = "NONCE_POOL_ACCOUNT"
        found[authority] = "NONCE_POOL_AUTHORITY"
    for authority, program in programs.values_list("upgrade_authority_key__public_key", "program_key__public_key"):
        found[authority] = "PROGRAM_UPGRADE_AUTHORITY"
        if program:
            found[program] = "PROGRAM_ACCOUNT"
    for configured in settings.LEDGER_PLATFORM_ADDRESSES:
        found[configured] = "CONFIGURED"
    if address is not None:
        return {address: found[address]} if address in found else {}
    return found


def platform_address_kind(address: str) -> str | None:
    """The kind of platform key ``address`` is (read now, never cached), or None."""
    return _rows(address).get(address)


#: Per process: (loaded at, address → kind). Refreshed every LEDGER_PLATFORM_KEYS_CACHE_SECONDS;
#: the keys a message is signed with are known to the engine directly (``SignerSpec.platform``),
#: so the cache only decides about platform addresses a message merely names.
_cache: tuple[float, dict[str, str]] | None = None
_cache_lock = threading.Lock()


def platform_addresses() -> dict[str, str]:
    global _cache
    hit = _cache
    if hit is not None and time.monotonic() - hit[0] < settings.LEDGER_PLATFORM_KEYS_CACHE_SECONDS:
        return hit[1]
    with _cache_lock:
        loaded = (time.monotonic(), _rows())
        _cache = loaded
    return loaded[1]


def platform_addresses_forget() -> None:
    """After this process made a new platform key (a fee payer, a pool nonce account)."""
    global _cache
    _cache = None


def refuse_platform_address(address: str, *, field: str) -> None:
    """Rule for records: no tenant records a platform address as an account of its own."""
    kind = platform_address_kind(address)
    if kind is not None:
        raise PlatformAddressNotAllowed(
            "This address belongs to a key the platform holds for itself; it cannot be recorded as an organization's account.", field=field,
        )


# ---------------------------------------------------------------------------------------
# The check at the one place the engine signs.


@dataclass(frozen=True)
class _Compiled:
    keys: list[str]  # static keys, then the addresses loaded from lookup tables (writable, then read-only)
    signers: int
    writable: set[int]
    instructions: list[tuple[int, list[int]]]  # (program index, account indexes)


def _compiled(message: Message | MessageV0, loaded: tuple[Sequence[Pubkey], Sequence[Pubkey]] = ((), ())) -> _Compiled:
    header = message.header
    static = [str(k) for k in message.account_keys]
    n, signers = len(static), header.num_required_signatures
    writable = {i for i in range(n) if (i < signers - header.num_readonly_signed_accounts) or (signers <= i < n - header.num_readonly_unsigned_accounts)}
    loaded_writable, loaded_readonly = loaded
    keys = static + [str(k) for k in loaded_writable] + [str(k) for k in loaded_readonly]
    writable |= set(range(n, n + len(loaded_writable)))
    instructions = [(ix.program_id_index, list(bytes(ix.accounts))) for ix in message.instructions]
    return _Compiled(keys, signers, writable, instructions)


def message_check(
    message: Message | MessageV0,
    *,
    signing: Mapping[str, object],
    grants: Mapping[str, Collection[int] | None] | None = None,
    loaded: tuple[Sequence[Pubkey], Sequence[Pubkey]] = ((), ()),
    fields: Mapping[str, str] | None = None,
    platform_signers: Collection[str] = (),
) -> None:
    """Refuse (400 PLATFORM_KEY_NOT_ALLOWED) a message in which a platform address
    appears outside the roles the engine gave it. ``signing``: the addresses about to be
    signed for here; ``platform_signers``: those of them the engine knows are the
    platform's (its fee payer, its pool's nonce authority) — checked even when the cached
    registry has not seen them yet; ``grants``: address → the instruction indexes where
    the engine itself put it (``ALL_INSTRUCTIONS``: all); ``fields``: address → the
    request field that named it, for the error."""
    if isinstance(grants, _Authored):
        return
    grants = grants or {}
    registry = platform_addresses()
    compiled = _compiled(message, loaded)
    platform = {a for a in compiled.keys if a in registry} | {a for a in platform_signers if a in compiled.keys}
    for address in platform:
        index = compiled.keys.index(address)
        granted = grants.get(address, ())
        everywhere = address in grants and granted is ALL_INSTRUCTIONS
        where = f" ({fields[address]})" if fields and address in fields else ""
        field = (fields or {}).get(address) or "itemData"
        is_signer = index < compiled.signers
        if everywhere:
            continue
        if is_signer and address not in signing:
            raise PlatformKeyRefused(f"The transaction would need a signature of {address}{where}, a key the platform holds for itself; it signs only what the platform authored.", field=field)
        for position, (program, accounts) in enumerate(compiled.instructions):
            if program == index and (is_signer or index in compiled.writable):
                raise PlatformKeyRefused(f"{address}{where} is a platform account; it cannot be invoked as a program here.", field=field)
            if index in accounts and position not in granted:
                if is_signer or index in compiled.writable:
                    raise PlatformKeyRefused(
                        f"{address}{where} is an account the platform holds for itself: it may pay this transaction's fees, never be the source, "
                        "authority, owner or destination of an instruction.", field=field,
                    )
        if is_signer and index != 0 and not any(index in accounts for position, (_, accounts) in enumerate(compiled.instructions) if position in granted):
            raise PlatformKeyRefused(f"{address}{where} is a platform key; it signs only as the fee payer or in the platform's own instructions.", field=field)
        if not is_signer and index in compiled.writable and not any(index in accounts for _, accounts in compiled.instructions):
            raise PlatformKeyRefused(f"{address}{where} is a platform account; the transaction may not write it.", field=field)


def shared_key_check(message: Message | MessageV0, specs: Sequence[object], api_key) -> None:
    """A key another organization shares with the acting one (``SignerSpec.
    shared_debit_api_keys`` set) signs for it only when the acting API key passes both of
    the owner's debit API-key lists: a signature authorizes every role the key has in the
    message (fee payer, source, owner, authority), so the rule holds whatever the role —
    the rule Sign Transaction's onPlatformSigning applies (accounts/signers.py)."""

    if api_key is None:
        return
    signers = {str(k) for k in message.account_keys[: message.header.num_required_signatures]}
    for spec in specs:
        lists = getattr(spec, "shared_debit_api_keys", None)
        if lists is None or str(spec.pubkey) not in signers:
            continue
        if not all(api_key_may_debit(list(allowed), api_key) for allowed in lists):
            raise ForbiddenError(
                "This API key may not sign with this account's key: the account is shared with your organization, and its "
                "networkCurrencyDebitApiKeys or tokenDebitApiKeys do not name this key.",
                field=getattr(spec, "field", None) or "itemData", code="SIGNER_NOT_ALLOWED",
            )


def engine_sign(
    message_bytes: bytes,
    message: Message | MessageV0,
    specs: Sequence[object],
    *,
    grants: Mapping[str, Collection[int] | None] | None = None,
    loaded: tuple[Sequence[Pubkey], Sequence[Pubkey]] = ((), ()),
    fields: Mapping[str, str] | None = None,
    api_key=None,
    signed: Collection[str] = (),
) -> dict[str, str]:
    """The engine's one way to sign: check the message (above), then decrypt and sign with
    each spec's key. ``specs``: SignerSpec-like objects (``pubkey``, ``managed_key`` or
    ``keypair``, ``platform``); ``signed``: signers whose signatures the transaction holds
    already (each passed this check when it was made)."""
    from custody.services import managed_key_signer  # noqa: PLC0415 - custody decrypts at signing time only

    signing = {**{a: None for a in signed}, **{str(s.pubkey): s for s in specs}}
    platform_signers = [a for a, s in signing.items() if getattr(s, "platform", False)]
    message_check(message, signing=signing, grants=grants, loaded=loaded, fields=fields, platform_signers=platform_signers)
    shared_key_check(message, specs, api_key)
    keys = [s.keypair if getattr(s, "keypair", None) is not None else managed_key_signer(key=s.managed_key) for s in specs]
    return sign_all(message_bytes, keys)
