"""Reading /metrics in tests: the text format parsed by prometheus_client's own parser."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families


def scrape(client) -> dict[tuple[str, frozenset], float]:
    """Every sample of GET /metrics: (name, labels) → value."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.content.decode()) for s in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when none)."""
    wanted = {(k, str(v)) for k, v in labels.items()}
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def families(samples: dict) -> set[str]:
    return {name for name, _ in samples}


def moved(client, before: dict, name: str, expected: float, timeout: float = 15.0, **labels) -> float:
    """Wait until ``name`` moved by ``expected`` since ``before`` (another process — the
    worker — may count a moment after the answer the test saw); returns the move."""
    deadline = time.monotonic() + timeout
    while True:
        delta = value(scrape(client), name, **labels) - value(before, name, **labels)
        if delta >= expected or time.monotonic() > deadline:
            return delta
        time.sleep(0.2)
