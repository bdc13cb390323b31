"""The webhook outbox: events written in the database transaction of the change they
describe (docs/webhooks.md, "Events").

The engine calls ``transaction_events`` where a transaction's state moves — inside the
same ``atomic()`` block — so an event exists if and only if its change committed. It is
set-based: one SELECT of the matching subscriptions for every transaction given (a request's
one, a pump chunk's 25, a claim pass's 100) and one INSERT of all their events; nothing per
transaction. A request of a tenant without subscriptions pays the SELECT only.

Who gets a transaction's events: the tenant's ACTIVE subscriptions of that cluster that ask
for the event type — registry ones always, an instrument's ones when the transaction's
message names the instrument's mint among its account keys. Network events
(``network_events.py``) go to registry subscriptions asking for ``account.network_event``.

After the commit, the delivery loop is kicked (``delivery.delivery_kick``) unless one runs.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import defaultdict
from datetime import datetime
from typing import Iterable, Sequence

from django.db import transaction as db_transaction
from django.utils import timezone

from ledger_project.timestamps import timestamp_text

from .models import EVENT_FLAGS, WebhookEvent, WebhookEventType, WebhookSource, WebhookStatus, WebhookSubscription

logger = logging.getLogger("ledger.webhooks")


def _dumps(payload: dict) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str)


def event_body(*, event_id: uuid.UUID, event_type: str, occurred_at: datetime, tenant_external_id: str, cluster: str, data: dict) -> str:
    """The JSON every endpoint receives (docs/webhooks.md, "Payloads"), fixed at write time:
    it is what is signed, on every attempt and replay."""
    return _dumps({"id": str(event_id), "type": event_type, "occurredAt": timestamp_text(occurred_at), "tenantOrganizationId": tenant_external_id,
                   "svmCluster": cluster, "data": data})


def _subscribers(pairs: set[tuple[int, str]], event_type: str) -> dict[tuple[int, str], list[tuple]]:
    """(tenant id, cluster) → [(subscription id, tenant external id, instrument address)] of
    the ACTIVE subscriptions asking for ``event_type``: one query for all the pairs."""
    if not pairs:
        return {}
    tenants, clusters = {t for t, _ in pairs}, {c for _, c in pairs}
    # Every row is filtered by the tenants of the changes at hand (engine code, any tenant).
    rows = WebhookSubscription.unscoped.filter(tenant_id__in=tenants, cluster__in=clusters, status=WebhookStatus.ACTIVE, **{EVENT_FLAGS[event_type]: True}).order_by("pk")
    found: dict[tuple[int, str], list[tuple]] = defaultdict(list)
    for pk, tenant_id, cluster, source, address, external in rows.values_list("pk", "tenant_id", "cluster", "source", "instrument_address", "tenant__external_id"):
        if (tenant_id, cluster) in pairs:
            found[(tenant_id, cluster)].append((pk, external, address if source == WebhookSource.FINANCIAL_INSTRUMENT else None))
    return found


def _account_keys(tx) -> set[str]:
    from chain import builder

    try:
        return {str(key) for key in builder.message_from_bytes(bytes(tx.message)).account_keys}
    except Exception:  # noqa: BLE001 - a message the service stored always parses; never fail the change for an event
        logger.exception("could not read the account keys of transaction %s for its webhooks", tx.pk)
        return set()


def transaction_data(tx) -> dict:
    """``data`` of a transaction event: the transaction result (as the API renders it), the
    operation that built it and the slot it landed in."""
    from transactions.serializers import TransactionResultOutput

    return {"transaction": dict(TransactionResultOutput(tx).data), "operation": tx.operation, "slot": tx.slot}


def transaction_events(txs: Sequence, event_type: str, *, now: datetime | None = None) -> int:
    """Write ``event_type`` events of ``txs`` (as they are now) for every matching
    subscription, in the caller's database transaction. Returns how many rows it wrote."""
    if not txs:
        return 0
    subscribers = _subscribers({(tx.tenant_id, tx.cluster) for tx in txs}, event_type)
    if not subscribers:
        return 0
    now = now or timezone.now()
    rows: list[WebhookEvent] = []
    for tx in txs:
        subs = subscribers.get((tx.tenant_id, tx.cluster))
        if not subs:
            continue
        keys = _account_keys(tx) if any(address for _, _, address in subs) else set()
        matched = [(pk, external) for pk, external, address in subs if address is None or address in keys]
        if not matched:
            continue
        data = transaction_data(tx)
        if event_type == WebhookEventType.RESIGNED:
            data["previousOnchainId"] = getattr(tx, "previous_onchain_id", None)  # set by transactions/resign.py
        for item, subject in _items(tx):
            event_id = uuid.uuid4()
            body = event_body(event_id=event_id, event_type=event_type, occurred_at=now, tenant_external_id=matched[0][1], cluster=tx.cluster,
                              data=data if item is None else {**data, "batchItem": item})
            rows += [WebhookEvent(tenant_id=tx.tenant_id, cluster=tx.cluster, event_id=event_id, subscription_id=pk, event_type=event_type, subject=subject,
                                  body=body, occurred_at=now, next_attempt_at=now, retry_from=now) for pk, _ in matched]
    return _write(rows)


def _items(tx) -> list[tuple[dict | None, str]]:
    """The events' (batchItem, subject) for ``tx``: one event, or — a transaction carrying
    items of a batch payout (its effects' ``batch``: positions/batches.py) — one per item,
    as each would have had as a transfer of its own (docs/webhooks.md)."""
    subject = f"transaction:{tx.offchain_id}"
    batch = (tx.effects or {}).get("batch") if isinstance(tx.effects, dict) else None
    if not batch or not batch.get("items"):
        return [(None, subject)]
    return [({"batch": batch.get("offchainId"), "index": index}, f"{subject}:item:{index}") for index in batch["items"]]


def account_events(items: Iterable[tuple[int, str, str, datetime, dict]]) -> int:
    """Write ``account.network_event`` events: ``items`` of (tenant id, cluster, account
    address, time of the transaction, data), oldest first, for every registry subscription
    of that tenant asking for them. One query, one INSERT."""
    items = list(items)
    subscribers = _subscribers({(tenant_id, cluster) for tenant_id, cluster, *_ in items}, WebhookEventType.NETWORK_EVENT)
    now = timezone.now()
    rows: list[WebhookEvent] = []
    for tenant_id, cluster, address, occurred_at, data in items:
        subs = [(pk, external) for pk, external, instrument in subscribers.get((tenant_id, cluster), []) if instrument is None]
        if not subs:
            continue
        event_id = uuid.uuid4()
        body = event_body(event_id=event_id, event_type=WebhookEventType.NETWORK_EVENT, occurred_at=occurred_at, tenant_external_id=subs[0][1], cluster=cluster, data=data)
        rows += [WebhookEvent(tenant_id=tenant_id, cluster=cluster, event_id=event_id, subscription_id=pk, event_type=WebhookEventType.NETWORK_EVENT,
                              subject=f"account:{address}", body=body, occurred_at=occurred_at, next_attempt_at=now, retry_from=now) for pk, _ in subs]
    return _write(rows)


def _write(rows: list[WebhookEvent]) -> int:
    if not rows:
        return 0
    WebhookEvent.unscoped.bulk_create(rows)
    kick_delivery_on_commit()
    return len(rows)


def kick_delivery_on_commit() -> None:
    """After the commit that wrote events: start the delivery loop unless one runs. A broker
    outage must not fail the change (it committed): the watch (beat) starts the loop later."""

    def kick() -> None:
        from .delivery import delivery_kick

        try:
            delivery_kick()
        except Exception:  # noqa: BLE001 - any broker/transport failure
            logger.warning("could not start webhook delivery; the watch will", exc_info=True)

    db_transaction.on_commit(kick)
