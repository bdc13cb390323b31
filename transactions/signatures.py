"""Sign Transaction and Submit Transaction (spec "Blockchain transactions" 1; docs/transactions.md,
"Sign Transaction and Submit Transaction").

Both run in the phases of every mutation. The read phase here writes nothing and opens no
database transaction: the transaction's status, the accounts the request names, each
signature checked against the stored message, the lifetime read from the cluster, and the
on-platform signatures made. Then the caller's write phase: ``transaction_add_signatures``
or ``transaction_submit``, under the transaction's row lock, which check the status again
(a concurrent call may have moved it).

Which account a lookup names, and whether the calling API key may sign with its key here,
is the accounts area's to say: it registers an ``AccountSigner`` (accounts/apps.py), so the
engine does not import an area (docs/style.md, "Apps depend downward": pass in what the engine
needs).
"""

from __future__ import annotations

from typing import Protocol

from ledger_project.api.errors import LedgerError

from . import platform_keys
from chain import builder
from chain.rpc import rpc_for
from .models import MessageLifetime, Transaction, TransactionStatus
from .collecting import not_signable, signature_check, signer_check, takes_signatures, transaction_release
from .dkg_signers import dkg_signer
from .specs import SignerSpec


class AccountSigner(Protocol):
    def __call__(self, *, tenant, cluster: str, api_key, lookup: dict, field: str, on_platform: bool) -> SignerSpec:
        """The account ``lookup`` names on ``cluster``, as a signer: with its key when
        ``on_platform`` (403 SIGNER_NOT_ALLOWED when the key may not sign with it), else
        its address only (an off-platform signature is checked against it)."""
        ...


_account_signer: AccountSigner | None = None


def register_account_signer(resolver: AccountSigner) -> None:
    global _account_signer
    _account_signer = resolver


def _signer(**kwargs) -> SignerSpec:
    if _account_signer is None:  # pragma: no cover - the accounts app registers it at start
        raise RuntimeError("No AccountSigner is registered (accounts/apps.py registers it).")
    return _account_signer(**kwargs)


def dkg_signing_check(*, transaction: Transaction, tenant, api_key, off_platform: list[dict]) -> list:
    """Read phase of Sign Transaction's ``dkgSigning`` entries (after
    ``transaction_sign_check``): the contributions to record. A transaction that can never
    execute takes none (400 TRANSACTION_EXPIRED)."""
    signer = dkg_signer()
    contributions = []
    for index, entry in enumerate(off_platform):
        if entry.get("dkgSigning") is not None:
            contribution = signer.check(tenant=tenant, cluster=transaction.cluster, api_key=api_key, transaction=transaction,
                                             entry=entry, field=f"itemData.offPlatformSigning[{index}]")
            if contribution is not None:
                contributions.append(contribution)
    if contributions:
        lifetime_check(transaction)
    return contributions


def lifetime_check(tx: Transaction) -> None:
    """400 TRANSACTION_EXPIRED when ``tx`` can never execute: its blockhash is past its last
    valid block height (about a minute for RECENT_BLOCKHASH), its durable nonce moved on,
    or its durable-nonce signing window (LEDGER_DURABLE_NONCE_WINDOW_SECONDS since it was
    built) is over — the service then advances the nonce itself. One network read."""
    from .ending import lifetime_over, window_over

    window_over = tx.lifetime == MessageLifetime.DURABLE_NONCE and window_over(tx.txn_timestamp)
    if window_over or lifetime_over(tx, rpc_for(tx.cluster)):
        why = {
            MessageLifetime.RECENT_BLOCKHASH: "its blockhash expired (a RECENT_BLOCKHASH transaction lives about a minute)",
            MessageLifetime.DURABLE_NONCE: "its durable-nonce signing window is over" if window_over else "its durable nonce moved on",
        }[tx.lifetime]
        raise LedgerError(
            f"The transaction can never execute: {why}. Nothing was changed; request the operation again "
            "(with messageLifetimeStrategy DURABLE_NONCE, signers have up to the durable-nonce window).",
            field="itemData.transaction", code="TRANSACTION_EXPIRED",
        )


def transaction_sign_check(*, transaction: Transaction, tenant, api_key, off_platform: list[dict], on_platform: list[dict]) -> dict[str, str]:
    """Read phase of Sign Transaction. Returns the signatures to store: those of signers not
    collected yet (the first valid signature of a signer is kept, so a signature given
    again adds nothing), the on-platform ones made now. Entries with ``dkgSigning`` are
    ``dkg_signing_check``'s. Refusals, in this order:
    400 INVALID_TRANSACTION_STATE (not PARTIALLY_SIGNED); per offPlatformSigning entry the
    account's lookup (404, 400 lookup codes), 400 NOT_A_SIGNER, 400 INVALID_SIGNATURE; per
    onPlatformSigning lookup the same lookup answers, 403 SIGNER_NOT_ALLOWED, 400
    NOT_A_SIGNER; then, when anything new is to be stored, 400 TRANSACTION_EXPIRED."""
    tx = transaction
    if not takes_signatures(tx):
        raise not_signable(tx)
    message = bytes(tx.message)
    new: dict[str, str] = {}
    for index, entry in enumerate(off_platform):
        if entry.get("dkgSigning") is not None:
            continue  # partial signatures: dkg_signing_check
        at = f"itemData.offPlatformSigning[{index}]"
        signer = _signer(tenant=tenant, cluster=tx.cluster, api_key=api_key, lookup=entry["account"], field=f"{at}.account", on_platform=False)
        pubkey = str(signer.pubkey)
        signature_check(tx, pubkey, entry["signature"], field=f"{at}.signature", signer_field=f"{at}.account", message=message)
        if pubkey not in tx.signatures:
            new.setdefault(pubkey, entry["signature"])
    to_sign: dict[str, SignerSpec] = {}
    for index, lookup in enumerate(on_platform):
        at = f"itemData.onPlatformSigning[{index}]"
        signer = _signer(tenant=tenant, cluster=tx.cluster, api_key=api_key, lookup=lookup, field=at, on_platform=True)
        pubkey = str(signer.pubkey)
        signer_check(tx, pubkey, field=at)
        if pubkey not in tx.signatures and pubkey not in new:
            to_sign.setdefault(pubkey, signer)
    if new or to_sign:
        lifetime_check(tx)
    if to_sign:
        # Keys are decrypted only now, for signers the transaction still needs.
        # The engine's one signing point: the platform's keys in their roles only, shared
        # keys under their owner's debit API keys (transactions/platform_keys.py).
        new.update(platform_keys.engine_sign(message, builder.message_from_bytes(message), list(to_sign.values()), signed=[*tx.signatures, *new], api_key=api_key))
    return new


def _submit_refusal(tx: Transaction) -> LedgerError | None:
    """Why ``tx`` cannot be submitted by Submit Transaction, or None (held SIGNED)."""
    if tx.status == TransactionStatus.PARTIALLY_SIGNED and tx.withdrawn_at is not None:
        return not_signable(tx)  # withdrawn: it never will be
    if tx.status == TransactionStatus.PARTIALLY_SIGNED:
        return LedgerError(
            f"The transaction is PARTIALLY_SIGNED: the signatures of {', '.join(tx.missing_signers)} are missing; Sign Transaction collects them.",
            field="itemData.transaction", code="SIGNATURES_MISSING",
        )
    if tx.status == TransactionStatus.PENDING_APPROVAL:
        return LedgerError(
            "The transaction is PENDING_APPROVAL: a debit limit holds it until a key with PLATFORM_APPROVE_TRANSACTIONS approves it (Approve Transaction), which submits it.",
            field="itemData.transaction", code="APPROVAL_REQUIRED",
        )
    if tx.status == TransactionStatus.SIGNED and not tx.submit_when_signed:
        return None
    if tx.status in (TransactionStatus.SIGNED, TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED):
        why = "it was submitted already"
    else:
        why = "it has ended and can never execute"
    return LedgerError(f"The transaction is {tx.status}: {why}. Only SIGNED transactions held back (submitTxnIfAllSignaturesCollected false) are submitted here.",
                       field="itemData.transaction", code="INVALID_TRANSACTION_STATE")


def transaction_submit_check(*, transaction: Transaction) -> None:
    """Read phase of Submit Transaction: a SIGNED transaction held back, whose lifetime is
    not over (one network read). 400 SIGNATURES_MISSING, APPROVAL_REQUIRED,
    INVALID_TRANSACTION_STATE or TRANSACTION_EXPIRED otherwise."""
    refusal = _submit_refusal(transaction)
    if refusal is not None:
        raise refusal
    lifetime_check(transaction)


def transaction_submit(*, transaction: Transaction) -> Transaction:
    """Write phase of Submit Transaction: held SIGNED → queued for the pump on commit. A
    concurrent Submit (or a reconciliation that ended it) moved it first: the reason why,
    as the read phase would say it."""
    try:
        return transaction_release(transaction=transaction)
    except LedgerError:
        transaction.refresh_from_db()
        raise _submit_refusal(transaction) or LedgerError("The transaction cannot be submitted.", field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
