"""Scrape-time figures: apps register a function that returns metric families read from the
database when /metrics is scraped (a prometheus_client custom collector). Cheap, indexed,
grouped queries only: a scrape every 15 s must not load the database."""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

logger = logging.getLogger("ledger.metrics")

_sources: dict[str, Callable[[], Iterable[Metric]]] = {}


def collector_register(name: str, source: Callable[[], Iterable[Metric]]) -> None:
    """``source()`` yields metric families; registering a name again replaces it."""
    _sources[name] = source


class DatabaseCollector:
    """Every registered source, each timed; one that fails is reported by
    ``ledger_scrape_source_up`` = 0 and its log line, and the others still answer."""

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("ledger_scrape_source_up", "1 when the scrape-time source answered, 0 when it failed.", labels=["source"])
        took = GaugeMetricFamily("ledger_scrape_source_duration_seconds", "Time one scrape-time source took.", labels=["source"])
        for name, source in sorted(_sources.items()):
            started = time.perf_counter()
            try:
                families = list(source())
            except Exception:  # noqa: BLE001 - one failing source must not empty the scrape
                logger.exception("metrics source %s failed", name)
                up.add_metric([name], 0)
                families = []
            else:
                up.add_metric([name], 1)
            took.add_metric([name], time.perf_counter() - started)
            yield from families
        yield up
        yield took
