"""Prometheus metrics (docs/operations.md, "Metrics").

- ``multiproc``: where every process of an instance writes its counters (prometheus_client's
  multiprocess mode); imports nothing from prometheus_client, so settings and gunicorn's
  hooks can use it before the client reads PROMETHEUS_MULTIPROC_DIR.
- ``meters``: the counters and histograms the web, the worker and the RPC client move.
- ``collect``: scrape-time collectors an app registers (figures read from the database).
- ``middleware`` / ``views``: requests by route and status; ``GET /metrics``.

This package imports no app: the database figures are registered by the apps that own the
tables (backoffice/metrics.py), so the layers still point downward (docs/style.md, "Apps depend downward").
"""
