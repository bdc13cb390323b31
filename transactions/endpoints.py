"""Blockchain transactions' API: one declaration per operation (spec: Blockchain
transactions; tenancy/endpoints.py says what a row holds). The view set and routes are made
from ``TABLE`` (transactions/urls.py)."""

from __future__ import annotations

from rest_framework.response import Response

from ledger_project.api.schema import item_query
from tenancy.endpoints import Endpoint, bulk_schema
from tenancy.idempotency import write_phase
from tenancy.permissions import require_role
from tenancy.roles import Role

from . import approvals, chain_record, details, dkg_signers, selectors, signatures, withdrawals
from .collecting import transaction_add_signatures
from .responses import attach_wait, transaction_result
from .serializers import (
    BulkTransactionsCompactOutput,
    BulkTransactionsIdentifiersOutput,
    BulkTransactionsOutput,
    TransactionBulkInput,
    TransactionDecisionInput,
    TransactionDetailsInput,
    TransactionDetailsOutput,
    TransactionResultOutput,
    TransactionSignInput,
    TransactionStatusInput,
    TransactionSubmitInput,
    TransactionWithdrawInput,
)

TAG = ("Blockchain transactions",)
_V = "TransactionViewSet"


def _named(door, data: dict):
    ident = data["transaction"]
    return selectors.transaction_get(queryset=door.get_queryset(), onchain_id=ident.get("onchainId"), offchain_id=ident.get("offchainId"))


def _decided(door, tx):
    response = Response(transaction_result(tx))
    attach_wait(response, door.request, tx, transaction_result)
    return response


def _status(door, ctx, body):
    return Response(TransactionResultOutput(_named(door, body["itemData"])).data)


def _approver(door) -> None:
    """Role first (403 MISSING_ROLE whatever the transaction), then the tenant's transaction (404 like any missing one)."""
    require_role(door.api_key, Role.PLATFORM_APPROVE_TRANSACTIONS, why="approve or reject held transactions")


def _approve(door, ctx, body):
    data = body["itemData"]
    tx = _named(door, data)
    approvals.transaction_approval_check(transaction=tx, api_key=door.api_key)
    with write_phase():
        tx = approvals.transaction_approve(transaction=tx, api_key=door.api_key, reason=data.get("reason") or "", request_id=door.request.client_request_id)
    return _decided(door, tx)


def _reject(door, ctx, body):
    data = body["itemData"]
    tx = approvals.transaction_reject(transaction=_named(door, data), api_key=door.api_key, reason=data.get("reason") or "", request_id=door.request.client_request_id)
    return _decided(door, tx)


def _sign(door, ctx, body):
    data = body["itemData"]
    tx = _named(door, data)
    off_platform = data.get("offPlatformSigning") or []
    collected = signatures.transaction_sign_check(
        transaction=tx, tenant=door.tenant, api_key=door.api_key,
        off_platform=off_platform, on_platform=data.get("onPlatformSigning") or [],
    )
    contributions = signatures.dkg_signing_check(transaction=tx, tenant=door.tenant, api_key=door.api_key, off_platform=off_platform)
    with write_phase():
        submit = data.get("submitTxnIfAllSignaturesCollected") is not False
        for pubkey, signature in dkg_signers.dkg_signing_record(contributions).items():
            collected.setdefault(pubkey, signature)
        tx = transaction_add_signatures(transaction=tx, signatures=collected, submit=submit)
    return _decided(door, tx)


def _submit(door, ctx, body):
    tx = _named(door, body["itemData"])
    signatures.transaction_submit_check(transaction=tx)
    with write_phase():
        tx = signatures.transaction_submit(transaction=tx)
    return _decided(door, tx)


def _withdraw(door, ctx, body):
    data = body["itemData"]
    # Its own database transactions (a durable nonce is advanced over the network first),
    # as Reject Transaction; the answer is stored with x-request-id once it returns.
    tx = withdrawals.transaction_withdraw(transaction=_named(door, data), api_key=door.api_key, reason=data.get("reason") or "", request_id=door.request.client_request_id)
    return Response(transaction_result(tx))


def _details(door, ctx, body):
    data = body["itemData"]["transaction"]
    tx = selectors.transaction_details_get(queryset=door.get_queryset(), onchain_id=data.get("onchainId"), offchain_id=data.get("offchainId"))
    # Landed before its record was stored (settled before these columns, or failed on
    # chain): read once from the cluster and kept.
    tx = chain_record.transaction_chain_record_fill(transaction=tx)
    return Response(details.transaction_details(tx))


def _bulk(door, ctx, body, detail_level: str):
    # The body first, then the level: the selector refuses an unknown one (400 INVALID_ENUM).
    rows, count = selectors.transaction_list(queryset=door.get_queryset(), item_query=body.get("itemQuery"), level=detail_level)
    render = details.RENDERERS[detail_level]
    return Response({"count": count, "items": [render(row) for row in rows]})


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "status", "transactions/single/status", "post", "transaction-status", "fetchTransactionStatus", "Fetch Transaction Status",
             "Creates no transaction. The current transaction result of a transaction the service built.",
             TransactionStatusInput, _status, {200: TransactionResultOutput}, mutation=False, tags=TAG),
    Endpoint(_V, "approve", "transactions/approve", "patch", "transaction-approve", "approveTransaction", "Approve Transaction",
             "Releases a transaction held for approval (status PENDING_APPROVAL: a debit limit was exceeded) for submission. "
             "Needs role PLATFORM_APPROVE_TRANSACTIONS; the API key that requested the transaction cannot approve it (403 SELF_APPROVAL_NOT_ALLOWED). "
             "A RECENT_BLOCKHASH transaction can be approved only within its blockhash's lifetime (about a minute; later: 400 TRANSACTION_EXPIRED); "
             "DURABLE_NONCE gives approvers up to the durable-nonce window. A PARTIALLY_SIGNED transaction awaiting approval is approved ahead of its signatures. "
             "Answers the transaction result; ?wait= waits for it.",
             TransactionDecisionInput, _approve, {200: TransactionResultOutput}, wait=True, tags=TAG, before=_approver),
    Endpoint(_V, "reject", "transactions/reject", "patch", "transaction-reject", "rejectTransaction", "Reject Transaction",
             "Cancels a transaction held for approval (PENDING_APPROVAL, or PARTIALLY_SIGNED awaiting approval): status CANCELLED, nothing is executed "
             "(a durable nonce is advanced first). Needs role PLATFORM_APPROVE_TRANSACTIONS; the requesting key may reject (withdraw) its own request. "
             "Answers the transaction result.",
             TransactionDecisionInput, _reject, {200: TransactionResultOutput}, tags=TAG, before=_approver),
    Endpoint(_V, "sign", "transactions/sign", "patch", "transaction-sign", "signTransaction", "Sign Transaction",
             "Adds signatures to a PARTIALLY_SIGNED transaction: offPlatformSigning (each signature verified against serializedMessage and the account's key: "
             "400 INVALID_SIGNATURE, 400 NOT_A_SIGNER) and onPlatformSigning (managed accounts whose keys the calling API key may use, signed here: 403 "
             "SIGNER_NOT_ALLOWED otherwise). Signatures are stored as they arrive; a signer collected already keeps its first signature (giving it again "
             "changes nothing). When the last one arrives the status becomes SIGNED (PENDING_APPROVAL when a debit limit holds it) and it is submitted, "
             "unless submitTxnIfAllSignaturesCollected is false (then Submit Transaction sends it). A transaction that is not PARTIALLY_SIGNED: 400 "
             "INVALID_TRANSACTION_STATE; one that can never execute any more: 400 TRANSACTION_EXPIRED. dkgSigning: partial signatures of a DKG account's "
             "external players for a signing session (POST /api/v1/transactions/dkg/open), each verified on arrival (400 INVALID_PARTIAL_SIGNATURE naming "
             "the player); once the session has every share they are aggregated into the account's signature (docs/threshold-signing.md). "
             "An unknown transaction, or another organization's: 404. Answers the transaction result; ?wait= waits for it.",
             TransactionSignInput, _sign, {200: TransactionResultOutput}, wait=True, tags=TAG),
    Endpoint(_V, "submit", "transactions/submit", "patch", "transaction-submit", "submitTransaction", "Submit Transaction",
             "Submits a SIGNED transaction whose signatures were collected with submitTxnIfAllSignaturesCollected false. "
             "PARTIALLY_SIGNED: 400 SIGNATURES_MISSING (the message lists the signers); PENDING_APPROVAL: 400 APPROVAL_REQUIRED (Approve Transaction submits it); "
             "submitted already or ended: 400 INVALID_TRANSACTION_STATE; its lifetime over: 400 TRANSACTION_EXPIRED. An unknown transaction, or another "
             "organization's: 404. Answers the transaction result; ?wait= waits for it.",
             TransactionSubmitInput, _submit, {200: TransactionResultOutput}, wait=True, tags=TAG),
    Endpoint(_V, "withdraw", "transactions/withdraw", "patch", "transaction-withdraw", "withdrawTransaction", "Withdraw Transaction",
             "Our extension of the spec: the client's way out of a PARTIALLY_SIGNED transaction whose signatures will not come. "
             "From this call on it takes no signature (Sign Transaction: 400 INVALID_TRANSACTION_STATE) and its threshold signing sessions are "
             "CANCELLED; it ends CANCELLED (failure effects once, nothing executed) as soon as it provably can never execute. DURABLE_NONCE with a "
             "nonce authority the service holds: the nonce is advanced first and the answer is CANCELLED; so is it when a missing signer is a DKG "
             "account only the service's own players can sign for (no complete set of signatures can exist). RECENT_BLOCKHASH (or a nonce whose "
             "authority signs off platform): signatures handed out could still be combined and sent until its blockhash expires (about a minute) or "
             "its nonce moves on, so the answer is PARTIALLY_SIGNED with errorMessage saying it was withdrawn and when it ends; the service then "
             "ends it CANCELLED (or follows it, should someone have sent it with every signature). Any other status, or withdrawn already: 400 "
             "INVALID_TRANSACTION_STATE (PENDING_APPROVAL: Reject Transaction). Any key of the organization may withdraw its transactions, as "
             "any may sign them. An unknown transaction, or another organization's: 404. Answers the transaction result.",
             TransactionWithdrawInput, _withdraw, {200: TransactionResultOutput}, tags=TAG),
    Endpoint(_V, "details", "transactions/single", "post", "transaction-details", "fetchTransactionDetails", "Fetch Transaction Details",
             "Creates no transaction. The transaction result and the transaction itself: the operation that created it and the records it names, "
             "the message decoded (accounts with signer/writable flags, instructions of the System, SPL Token, Token-2022, Associated Token Account, "
             "Address Lookup Table, Compute Budget and Memo programs with their fields; raw base64 data for others), the required signers and which "
             "have signed, and once landed the chain's record: fee (lamports), compute units consumed, log messages, slot, block time, error. "
             "Served from the service's records (docs/transactions.md, \"Transaction details and history\").",
             TransactionDetailsInput, _details, {200: TransactionDetailsOutput}, mutation=False, tags=TAG),
    Endpoint(_V, "bulk", "transactions/bulk/<str:detail_level>", "post", "transactions-bulk", item_query("fetchTransactions", selectors.TRANSACTION_QUERY),
             "Fetch Transactions",
             "Creates no transaction. The acting organization's transactions on every cluster (filter on cluster to narrow), newest first unless "
             "sorted otherwise. detail-level: detailed (the Fetch Transaction Details shape, from the service's records only), compact (the "
             "transaction result), identifiers ({onchainId, offchainId}). itemQuery fields: docs/query.md.",
             TransactionBulkInput, _bulk, mutation=False, tags=TAG,
             schema=bulk_schema("BulkTransactionsPage", (BulkTransactionsOutput, BulkTransactionsCompactOutput, BulkTransactionsIdentifiersOutput))),
)
