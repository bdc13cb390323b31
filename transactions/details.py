"""Rendering of Fetch Transaction Details and Fetch Transactions (docs/transactions.md,
"Transaction details and history").

Plain dicts built directly from a Transaction (or a row of the page query holding the
same column names): a DRF serializer instance per item costs more than the page's query
(accounts/render.py says the same). ``serializers.TransactionDetailsOutput`` stays the
documented schema; transactions/tests/test_api_details.py keeps both in step.
Everything shown comes from the database; nothing here asks the cluster.
"""

from __future__ import annotations

from chain.decode import decode_message
from ledger_project.api.shapes import renders
from ledger_project.timestamps import timestamp_text

from .responses import transaction_result

#: Effects keys naming the records an operation created or changed → their type.
_RECORD_KEYS = (("account", "ACCOUNT"), ("instrument", "FINANCIAL_INSTRUMENT"), ("position", "POSITION"))
_RECORD_LISTS = (("created", "POSITION"), ("positions", "POSITION"))


def operation_records(effects: dict | None) -> list[dict]:
    """The records the creating operation names in its effects (``transaction_record``'s
    ``effects_data``): ``[{type, offchainId}]``, each once, in a fixed order."""
    effects = effects or {}
    found: list[tuple[str, str]] = []
    for key, kind in _RECORD_KEYS:
        if isinstance(effects.get(key), str):
            found.append((kind, effects[key]))
    for key, kind in _RECORD_LISTS:
        for value in effects.get(key) or ():
            if isinstance(value, str):
                found.append((kind, value))
    return [{"type": kind, "offchainId": offchain_id} for kind, offchain_id in dict.fromkeys(found)]


@renders("transactions.serializers.TransactionIdentifiersOutput")
def transaction_identifiers(tx) -> dict:
    # A held transaction's signature is not disclosed (TransactionResultOutput.get_onchainId).
    return {"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": str(tx.offchain_id)}


@renders("transactions.serializers.TransactionResultOutput")
def transaction_compact(tx) -> dict:
    return transaction_result(tx)


def _chain_error(error) -> str | None:
    if isinstance(error, dict) and error.get("err") is not None:
        return str(error["err"])
    return None


@renders("transactions.serializers.TransactionDetailsOutput")
def transaction_details(tx) -> dict:
    """The transaction result and what the transaction is: the operation that created it,
    its message decoded (accounts, instructions, lookup tables), its signers and which
    have signed, and, once landed and read, the chain's record (fee, compute units, logs,
    slot, block time)."""
    decoded = decode_message(bytes(tx.message), tx.loaded_addresses)
    signed = tx.signatures or {}
    logs = tx.log_messages
    return {
        **transaction_result(tx),
        "cluster": tx.cluster,
        "operation": tx.operation,
        "operationRecords": operation_records(tx.effects),
        "createdByKey": getattr(tx, "created_by_key_name", None),
        "transactionVersion": tx.version,
        "messageLifetimeStrategy": tx.lifetime,
        "recentBlockhash": tx.blockhash,
        "lastValidBlockHeight": tx.last_valid_block_height,
        "nonceAccount": tx.nonce_account or None,
        "commitmentLevel": tx.commitment,
        "feePayer": tx.fee_payer,
        "requiredSigners": [{"onchainId": address, "signed": address in signed} for address in tx.required_signers or ()],
        "accounts": decoded["accounts"],
        "addressTableLookups": decoded["addressTableLookups"],
        "instructions": decoded["instructions"],
        "fee": int(tx.fee) if tx.fee is not None else None,
        "computeUnitsConsumed": int(tx.compute_units_consumed) if tx.compute_units_consumed is not None else None,
        "logMessages": list(logs) if logs is not None else None,
        "slot": int(tx.slot) if tx.slot is not None else None,
        "blockTime": timestamp_text(tx.block_time),
        "submittedAt": timestamp_text(tx.submitted_at),
        "confirmedAt": timestamp_text(tx.confirmed_at),
        "finalizedAt": timestamp_text(tx.finalized_at),
        "error": _chain_error(tx.error),
    }


RENDERERS = {"detailed": transaction_details, "compact": transaction_compact, "identifiers": transaction_identifiers}
