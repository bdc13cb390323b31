"""The back office's list views at scale (issue 18): 200,000 accounts, 200,000 transactions,
100,000 positions and 200,000 staff audit entries in PostgreSQL across 20 tenants.

Each page is requested through Django's full stack (middleware, admin, templates) by a
signed-in superuser with the test client — server time without the network — 15 times
after 2 warm-up requests; one JSON line per page with p50/p90 and the queries it ran
(target: p50 < 300 ms). Uses a throwaway database on DATABASE_URL's PostgreSQL server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROWS = int(os.environ.get("BENCH_ADMIN_ROWS", "200000"))
TENANTS = 20
REPEAT = 15
TARGET_P50_MS = 300


def seed() -> dict:
    """Rows in bulk through the ORM (``unscoped``: many tenants at once); returns the
    identifiers the searches look for."""
    import random
    from datetime import timedelta

    import django

    django.setup()
    from django.utils import timezone
    from solders.pubkey import Pubkey
    from solders.signature import Signature

    from accounts.models import Account
    from backoffice.models import StaffAuditEntry
    from instruments.models import FinancialInstrument
    from positions.models import Position
    from tenancy.models import TenantOrganization
    from transactions.models import Transaction

    rnd = random.Random(18)
    now = timezone.now()
    address = lambda: str(Pubkey(rnd.randbytes(32)))  # noqa: E731
    tenants = [TenantOrganization.objects.create(external_id=f"T{t:02d}", name=f"Tenant {t}") for t in range(TENANTS)]
    statuses = ["FINALIZED"] * 90 + ["CONFIRMED"] * 4 + ["SUBMITTED"] * 3 + ["PENDING_APPROVAL", "FAILED", "EXPIRED"]
    txs = [Transaction(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", operation=rnd.choice(["positions.transfer", "positions.mint", "accounts.create"]),
                       status=rnd.choice(statuses), message=b"", blockhash="x", fee_payer=address(), onchain_id=str(Signature(rnd.randbytes(64))))
           for i in range(ROWS)]
    Transaction.unscoped.bulk_create(txs, batch_size=1000)
    Transaction.unscoped.update(txn_timestamp=now - timedelta(days=3))  # auto_now_add: spread below
    with django.db.connection.cursor() as cursor:
        cursor.execute("UPDATE transactions_transaction SET txn_timestamp = txn_timestamp + (id % 259200) * interval '1 second'")
    wallets = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="WALLET", name=f"account {i}", code=f"C{i}",
                       lamports_balance=rnd.randint(0, 10**12)) for i in range(ROWS // 2)]
    Account.unscoped.bulk_create(wallets, batch_size=1000)
    mints = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="ASSET_TOKEN") for i in range(100)]
    Account.unscoped.bulk_create(mints)
    instruments = FinancialInstrument.unscoped.bulk_create([
        FinancialInstrument(tenant=m.tenant, cluster="CHAIN_LOCALNET", mint_account=m, address=m.address, version="TOKEN_2022", al_id=f"ALFICBD{i:08d}",
                            al_category="FIXED_INCOME", al_type="CORPORATE_BOND", symbol=f"B{i}", decimals=2) for i, m in enumerate(mints)])
    holdings = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="ASSET_TOKEN_ACCOUNT", token_balance=rnd.randint(0, 10**6), token_decimals=2)
                for i in range(ROWS // 2 - 100)]
    Account.unscoped.bulk_create(holdings, batch_size=1000)
    by_tenant = {}
    for w in wallets:
        by_tenant.setdefault(w.tenant_id, []).append(w)
    instruments_by_tenant = {}
    for ins in instruments:
        instruments_by_tenant.setdefault(ins.tenant_id, []).append(ins)
    positions, seen = [], {}
    for h in holdings:
        # One associated position per (owner, instrument): the n-th of a tenant goes to
        # owner n mod owners, instrument n div owners.
        n = seen[h.tenant_id] = seen.get(h.tenant_id, -1) + 1
        owners, kinds = by_tenant[h.tenant_id], instruments_by_tenant[h.tenant_id]
        owner = owners[n % len(owners)]
        positions.append(Position(tenant_id=h.tenant_id, cluster="CHAIN_LOCALNET", account=h, address=h.address, owner=owner, owner_address=owner.address,
                                  instrument=kinds[(n // len(owners)) % len(kinds)]))
    Position.unscoped.bulk_create(positions, batch_size=1000)
    StaffAuditEntry.objects.bulk_create([StaffAuditEntry(kind="ACTION", actor=f"staff{i % 50}", action=rnd.choice(["approve_held", "revoke", "pause"]),
                                                         model="transactions.transaction", object_ids=[str(i)], object_count=1, at=now - timedelta(seconds=i))
                                         for i in range(ROWS)], batch_size=1000)
    return {"account": wallets[ROWS // 4].address, "position": positions[len(positions) // 3].address, "signature": txs[ROWS // 3].onchain_id,
            "year": now.year, "month": now.month}


def measure(found: dict) -> None:
    import statistics

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import override_settings

    user = User.objects.create_superuser("bench", password=None)
    client = Client()
    client.force_login(user)
    pages = [
        ("dashboard", "/admin/"),
        ("accounts", "/admin/accounts/account/"),
        ("accounts_filtered", "/admin/accounts/account/?status__exact=ACTIVE&type__exact=WALLET"),
        ("accounts_by_address", f"/admin/accounts/account/?q={found['account']}"),
        ("accounts_by_name", "/admin/accounts/account/?q=account 4242"),
        ("accounts_this_month", f"/admin/accounts/account/?created_at__year={found['year']}&created_at__month={found['month']}"),
        ("transactions", "/admin/transactions/transaction/"),
        ("transactions_submitted", "/admin/transactions/transaction/?status__exact=SUBMITTED"),
        ("transactions_by_signature", f"/admin/transactions/transaction/?q={found['signature']}"),
        ("positions", "/admin/positions/position/"),
        ("positions_by_address", f"/admin/positions/position/?q={found['position']}"),
        ("instruments", "/admin/instruments/financialinstrument/"),
        ("staff_audit", "/admin/backoffice/staffauditentry/"),
    ]
    with override_settings(DEBUG=True):  # to count queries
        for name, url in pages:
            times, queries = [], 0
            for i in range(REPEAT + 2):
                reset_queries()
                started = time.perf_counter()
                response = client.get(url)
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200, (url, response.status_code)
                if i >= 2:
                    times.append(elapsed)
                    queries = len(connection.queries)
            times.sort()
            p50 = statistics.median(times)
            print(json.dumps({"bench": f"admin_{name}", "rows": ROWS, "url": url if "?q=" not in url else url.split("?q=")[0] + "?q=…", "p50_ms": round(p50, 1),
                              "p90_ms": round(times[int(len(times) * 0.9) - 1], 1), "queries": queries, "target_p50_ms": TARGET_P50_MS,
                              "database": "postgresql"}), flush=True)


def main() -> None:
    from bench.common import manage, throwaway_database, vacuum_analyze

    with throwaway_database() as db_url:
        env = {**os.environ, "DATABASE_URL": db_url, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings",
               "LEDGER_CLUSTERS": "", "LEDGER_ADMIN_NODE_TIMEOUT_SECONDS": "0.5"}
        env.pop("REDIS_URL", None)
        manage(env, "migrate", "--noinput", "-v0")
        started = time.perf_counter()
        seeded = subprocess.run([sys.executable, __file__, "seed"], cwd=ROOT, env=env, capture_output=True, text=True)
        if seeded.returncode != 0:
            sys.stderr.write(seeded.stderr[-3000:])
            raise SystemExit(seeded.returncode)
        found = json.loads(seeded.stdout.strip().splitlines()[-1])
        seed_seconds = time.perf_counter() - started
        vacuum_analyze(db_url)
        result = subprocess.run([sys.executable, __file__, "measure", json.dumps(found)], cwd=ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr[-3000:])
            raise SystemExit(result.returncode)
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                print(json.dumps({**json.loads(line), "seed_seconds": round(seed_seconds, 1)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "seed":
        print(json.dumps(seed()))
    elif len(sys.argv) > 1 and sys.argv[1] == "measure":
        measure(json.loads(sys.argv[2]))
    else:
        main()
