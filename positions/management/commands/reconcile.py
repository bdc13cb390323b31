"""python manage.py reconcile [--cluster CHAIN_LOCALNET] [--repair]: compare every ACTIVE
account and position with the chain and report drift as JSON (positions/reconcile.py).
Exits 1 when drift was found and not repaired, so it can gate scripts and CI."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chain.errors import ChainBehind
from positions.reconcile import reconcile


class Command(BaseCommand):
    help = "Compare offchain balances and position states with the chain; optionally repair drift."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", action="append", help="Cluster name (repeatable); default: every configured cluster.")
        parser.add_argument("--repair", action="store_true", help="Set offchain balances and states to the chain's.")

    def handle(self, *args, cluster=None, repair=False, **options):
        clusters = cluster or list(settings.LEDGER_CLUSTERS)
        unknown = [c for c in clusters if c not in settings.LEDGER_CLUSTERS]
        if unknown:
            raise CommandError(f"Unknown cluster(s): {', '.join(unknown)}")
        drifted = False
        for name in clusters:
            try:
                report = reconcile(cluster=name, repair=repair)
            except ChainBehind as exc:  # no read older than the service's writes: no report rather than a wrong one
                raise CommandError(f"{name}: {exc.message}") from exc
            self.stdout.write(json.dumps(report.as_dict()))
            drifted |= len(report.drift) > report.repaired  # each repaired drift is one fix; the rest stay
        if drifted:
            raise SystemExit(1)
