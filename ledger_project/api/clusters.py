"""The cluster a request addresses: query parameter svmCluster (older alias chainClusterId).

Clusters and their RPC URLs come from settings.LEDGER_CLUSTERS; CHAIN_LOCALNET, the
embedded node, is always there and is the default (docs/api.md, Clusters).
"""

from __future__ import annotations

from django.conf import settings

from ledger_project.api.errors import LedgerError


def configured_clusters() -> dict[str, str]:
    return dict(settings.LEDGER_CLUSTERS)


def cluster_from_request(request) -> str:
    params = request.query_params if hasattr(request, "query_params") else request.GET
    new, old = params.get("svmCluster"), params.get("chainClusterId")
    for given in ("svmCluster", "chainClusterId"):
        if given in params and not params.get(given, "").strip():
            raise LedgerError("An empty cluster name names no cluster; omit the parameter for the default.", field=given, code="INVALID_CLUSTER")
    if new and old and new != old:
        raise LedgerError("svmCluster and chainClusterId name different clusters; send one.", field="svmCluster", code="INVALID_CLUSTER")
    name = (new or old or settings.LEDGER_DEFAULT_CLUSTER).strip()
    if name not in settings.LEDGER_CLUSTERS:
        known = ", ".join(sorted(settings.LEDGER_CLUSTERS))
        raise LedgerError(f"Unknown or unconfigured cluster {name!r}; configured: {known}.", field="svmCluster" if new or not old else "chainClusterId", code="INVALID_CLUSTER")
    return name
