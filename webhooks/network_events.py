"""account.network_event: every confirmed transaction touching a subscribed account,
including those made outside the service, detected from the cluster (docs/webhooks.md,
"Network events").

The poller (``ledger.webhooks.poll_network_events``, on the beat every
LEDGER_NETWORK_EVENTS_POLL_SECONDS) asks each cluster, per watched address, for the
signatures newer than the address's cursor (getSignaturesForAddress at ``confirmed``, with
``until`` = the cursor, paged with ``before``), reads what each did to the address's
balances (one JSON-RPC batch of getTransaction), and in one database transaction moves the
cursor (compare-and-set: a concurrent poller writes nothing) and writes the events, oldest
first. A chain outage changes nothing; the next poll resumes from the same cursor.

Which addresses: the areas say, through a registered provider (the accounts area: accounts
with ``subscribeToNetworkEvents``), for tenants that have a subscription asking for
``account.network_event`` — an address nobody listens to is not polled. The transactions app
does not import the areas (apps depend downward).

The first poll of an address starts from the time its account was subscribed (``since``,
the provider's; a second before it, blockTime having seconds only): history before the
subscription is not replayed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from typing import Callable, Iterable

from django.conf import settings
from django.db import IntegrityError, transaction as db_transaction
from django.utils import timezone
from solders.pubkey import Pubkey
from solders.signature import Signature

from ledger_project.timestamps import timestamp_text
from tenancy.scoping import worker_only

from chain.errors import ChainRpcError, ChainUnavailable
from chain.rpc import rpc_for

from . import outbox
from .models import NetworkEventCursor, WebhookStatus, WebhookSubscription

logger = logging.getLogger("ledger.webhooks")

PAGE = 1000  # getSignaturesForAddress's maximum


@dataclass(frozen=True)
class WatchedAccount:
    """An account whose transactions raise account.network_event for its tenant."""

    tenant_id: int
    cluster: str
    address: str
    offchain_id: str
    since: datetime


_PROVIDERS: list[Callable[[set[int]], Iterable[WatchedAccount]]] = []


def watched_accounts(provider: Callable[[set[int]], Iterable[WatchedAccount]]):
    """Register ``provider(tenant_ids)``: the accounts of those tenants to watch."""
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)
    return provider


@worker_only  # the poller: every tenant
def _listening() -> dict[tuple[int, str], datetime]:
    """(tenant, cluster) with a subscription asking for network events → since when."""
    listening: dict[tuple[int, str], datetime] = {}
    for tenant_id, cluster, created in WebhookSubscription.unscoped.filter(status=WebhookStatus.ACTIVE, network_event=True).values_list("tenant_id", "cluster", "created_at"):
        listening[(tenant_id, cluster)] = min(created, listening.get((tenant_id, cluster), created))
    return listening


@worker_only  # the poller: every tenant
def poll(*, clusters: Iterable[str] | None = None) -> int:
    """One poll of every watched address (of ``clusters``); returns the events written."""
    listening = _listening()
    if not listening:
        return 0
    wanted = set(clusters) if clusters is not None else set(settings.LEDGER_CLUSTERS)
    by_address: dict[tuple[str, str], list[WatchedAccount]] = defaultdict(list)
    for provider in _PROVIDERS:
        for account in provider({tenant for tenant, _ in listening}):
            heard_since = listening.get((account.tenant_id, account.cluster))
            if heard_since is not None and account.cluster in wanted:
                # From when both the account is subscribed and someone listens.
                by_address[(account.cluster, account.address)].append(dataclasses.replace(account, since=max(account.since, heard_since)))
    written = 0
    for (cluster, address), watchers in by_address.items():
        try:
            written += poll_address(cluster, address, watchers)
        except (ChainUnavailable, ChainRpcError) as exc:
            logger.warning("network events of %s on %s not polled: %s", address, cluster, exc.message)
    return written


def _cursor(cluster: str, address: str, since: datetime) -> NetworkEventCursor:
    cursor = NetworkEventCursor.objects.filter(cluster=cluster, address=address).first()
    if cursor is None:
        try:
            with db_transaction.atomic():
                cursor = NetworkEventCursor.objects.create(cluster=cluster, address=address, since=since)
        except IntegrityError:  # another poller made it first
            cursor = NetworkEventCursor.objects.get(cluster=cluster, address=address)
    return cursor


def _floor(since: datetime) -> int:
    return int(since.timestamp()) - 1


@worker_only  # the poller: the address's watchers may be of several tenants
def poll_address(cluster: str, address: str, watchers: list[WatchedAccount]) -> int:
    """Events for every transaction touching ``address`` since its cursor (or, on the first
    poll, since the earliest watcher subscribed). Returns the events written."""
    cursor = _cursor(cluster, address, min(w.since for w in watchers))
    rpc = rpc_for(cluster)
    until = Signature.from_string(cursor.last_signature) if cursor.last_signature else None
    floor = None if until is not None else _floor(cursor.since)
    newest_first, before, complete = [], None, False
    for _ in range(max(1, settings.LEDGER_NETWORK_EVENTS_MAX_PAGES)):
        page = rpc.signatures_for_address(Pubkey.from_string(address), before=before, until=until, limit=PAGE)
        for info in page:
            if floor is not None and info.block_time is not None and info.block_time < floor:
                complete = True
                break
            newest_first.append(info)
        if complete or len(page) < PAGE:
            complete = True
            break
        before = page[-1].signature
    if not complete:
        # Past LEDGER_NETWORK_EVENTS_MAX_PAGES pages since the last poll: the older ones are
        # skipped (docs/webhooks.md, "Limits"); raise the setting for such an address.
        logger.error("more than %d signatures of %s on %s since the last poll; the oldest are skipped", PAGE * settings.LEDGER_NETWORK_EVENTS_MAX_PAGES, address, cluster)
    polled = timezone.now()
    if not newest_first:
        NetworkEventCursor.objects.filter(pk=cursor.pk).update(polled_at=polled)
        return 0
    oldest_first = newest_first[::-1]
    balances = rpc.landed_balances([info.signature for info in oldest_first])
    items = []
    for info, landed in zip(oldest_first, balances):
        data = _data(address, info, landed)
        occurred = datetime.fromtimestamp(info.block_time, tz=dt_timezone.utc) if info.block_time is not None else polled
        for watcher in watchers:  # a watcher added later gets what is newer than the cursor: from when it joined
            items.append((watcher.tenant_id, cluster, address, occurred, {"account": {"onchainId": address, "offchainId": watcher.offchain_id}, **data}))
    newest = newest_first[0]
    with db_transaction.atomic():
        moved = NetworkEventCursor.objects.filter(pk=cursor.pk, last_signature=cursor.last_signature).update(
            last_signature=str(newest.signature), last_slot=newest.slot, polled_at=polled)
        if not moved:
            return 0  # another poller took these signatures
        return outbox.account_events(items)


def _data(address: str, info, landed) -> dict:
    """What the transaction did to ``address``: lamports before/after, and the token
    balances of token accounts it is (or owns), in base units."""
    lamports = landed.lamports.get(address) if landed is not None else None
    tokens = []
    if landed is not None:
        for account, balance in landed.tokens.items():
            if account == address or balance.owner == address:
                tokens.append({"tokenAccount": account, "mint": balance.mint, "owner": balance.owner or None, "decimals": balance.decimals,
                               "before": balance.pre, "after": balance.post, "change": balance.post - balance.pre})
    return {
        "signature": str(info.signature),
        "slot": info.slot,
        "blockTime": timestamp_text(datetime.fromtimestamp(info.block_time, tz=dt_timezone.utc)) if info.block_time is not None else None,
        "success": info.err is None,
        "error": str(info.err) if info.err is not None else None,
        "lamports": {"before": lamports[0], "after": lamports[1], "change": lamports[1] - lamports[0]} if lamports else None,
        "tokenBalances": tokens,
    }
