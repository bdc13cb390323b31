"""The feeds' figures on /metrics (docs/operations.md, "Metrics"; docs/marketdata.md): read
from the database at scrape time, registered with the collector by marketdata/apps.py."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from .models import DataSourceStatus, OnchainDataSource


def marketdata_state():
    now = timezone.now()
    feeds = GaugeMetricFamily("ledger_marketdata_feeds", "Active onchain data sources (feeds).", labels=["cluster"])
    stale = GaugeMetricFamily("ledger_marketdata_feeds_stale", "Active feeds whose last accepted update is older than their own "
                              "maxStaleness (or never updated).", labels=["cluster"])
    oldest = GaugeMetricFamily("ledger_marketdata_oldest_update_age_seconds", "Age of the oldest last update among active feeds.",
                               labels=["cluster"])
    figures: dict[str, list] = {}
    for cluster, updated, bound in (OnchainDataSource.unscoped.filter(status=DataSourceStatus.ACTIVE).order_by()
                                    .values_list("cluster", "onchain_updated_at", "max_staleness_seconds")):
        entry = figures.setdefault(cluster, [0, 0, 0.0])
        age = max(0.0, (now - updated).total_seconds()) if updated is not None else None
        entry[0] += 1
        entry[1] += 1 if age is None or age > bound else 0
        entry[2] = max(entry[2], age or 0.0)
    for cluster in sorted(set(figures) | set(settings.LEDGER_CLUSTERS)):
        n, s, age = figures.get(cluster, (0, 0, 0.0))
        feeds.add_metric([cluster], n)
        stale.add_metric([cluster], s)
        oldest.add_metric([cluster], age)
    return [feeds, stale, oldest]
