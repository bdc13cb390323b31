"""The platform's balances, sampled by the worker (``ledger.backoffice.sample_balances``):
each cluster's fee payer and the lamports its durable nonce pool holds. /metrics reports the
latest sample and the dashboard plots the last day, so a scrape or a page view never waits
for a cluster (docs/operations.md, "Metrics").

Acts for no tenant: the platform's own accounts (the fee payer, the pool's nonce accounts,
which have no tenant).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from transactions.models import NonceAccount, NonceState, PlatformFeePayer

from .models import BalanceAccount, BalanceSample

logger = logging.getLogger("ledger.backoffice")


def balances_sample() -> int:
    """Read and store every configured cluster's platform balances; drop samples past
    retention. A cluster that does not answer is skipped (its last sample ages, which
    /metrics shows). Returns how many samples were stored."""
    from solders.pubkey import Pubkey

    from chain.rpc import rpc_for

    now = timezone.now()
    payers = {row.cluster: row.managed_key.public_key for row in PlatformFeePayer.objects.select_related("managed_key")}
    samples = []
    for cluster in settings.LEDGER_CLUSTERS:
        try:
            rpc = rpc_for(cluster)
            if cluster in payers:
                samples.append(BalanceSample(cluster=cluster, account=BalanceAccount.FEE_PAYER, lamports=rpc.balance(Pubkey.from_string(payers[cluster])), at=now))
            pool = list(NonceAccount.objects.filter(Q(tenant__isnull=True) & ~Q(state=NonceState.CLOSED), cluster=cluster).values_list("address", flat=True))
            if pool:
                held = sum(a.lamports for a in rpc.read_accounts(pool).accounts.values() if a is not None)
                samples.append(BalanceSample(cluster=cluster, account=BalanceAccount.NONCE_POOL, lamports=held, at=now))
        except Exception as exc:  # noqa: BLE001 - one cluster down must not stop the others' samples
            logger.warning("could not sample the balances of %s: %s", cluster, getattr(exc, "message", exc))
    BalanceSample.objects.bulk_create(samples)
    BalanceSample.objects.filter(at__lt=now - timedelta(hours=settings.LEDGER_BALANCE_SAMPLE_RETENTION_HOURS)).delete()
    return len(samples)
