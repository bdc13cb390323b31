"""The chain's record of a landed transaction (fee, compute units, logs, block time,
loaded addresses): stored by settlement, or read once on demand for one settled without it
(Fetch Transaction Details; docs/transactions.md).
"""

from __future__ import annotations

import logging

from chain.rpc import rpc_for

from .models import Transaction, TransactionStatus

logger = logging.getLogger("ledger.transactions")


#: Statuses of a transaction that executed on chain (FAILED only with a slot: an on-chain
#: error; a preflight refusal never landed).
LANDED = (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED, TransactionStatus.FAILED)


def chain_record_fields(record) -> dict:
    """Transaction columns from the chain's record of it (``chain.balances.TransactionBalances``)."""
    from datetime import datetime, timezone as dt_timezone

    return {
        "fee": record.fee,
        "compute_units_consumed": record.compute_units_consumed,
        "log_messages": list(record.log_messages) if record.log_messages is not None else None,
        "block_time": datetime.fromtimestamp(record.block_time, tz=dt_timezone.utc) if record.block_time is not None else None,
        "loaded_addresses": record.loaded,
    }


def chain_record_due(tx: Transaction) -> bool:
    """Landed, and its record (fee, logs, ...) not stored: settled before the columns
    existed, failed on chain (settlement reads no record for those), or confirmed and
    not yet at the commitment its effects wait for."""
    return tx.fee is None and bool(tx.onchain_id) and tx.slot is not None and tx.status in LANDED


def transaction_chain_record_fill(*, transaction: Transaction) -> Transaction:
    """Read the chain's record of a landed transaction stored without it, once, and store
    it (a conditional UPDATE: a concurrent fill or settlement wins alike). Outside any
    database transaction; a cluster that does not answer, or no longer has the record,
    leaves the columns null (the next call tries again) and is logged, never an error:
    details show what the database holds."""
    from solders.signature import Signature

    from chain.errors import ChainRpcError, ChainUnavailable
    from .effects import static_addresses

    tx = transaction
    if not chain_record_due(tx):
        return tx
    try:
        record = rpc_for(tx.cluster).transaction_balances(Signature.from_string(tx.onchain_id), static_addresses(tx))
    except (ChainUnavailable, ChainRpcError) as exc:
        logger.warning("could not read the record of transaction %s: %s", tx.onchain_id, exc)
        return tx
    if record is None:
        logger.info("the cluster has no record of transaction %s (pruned history?)", tx.onchain_id)
        return tx
    fields = chain_record_fields(record)
    Transaction.objects.for_tenant(tx.tenant).filter(pk=tx.pk, fee__isnull=True).update(**fields)
    for name, value in fields.items():
        setattr(tx, name, value)
    return tx
