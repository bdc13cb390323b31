"""The back office's list views at scale (issue 18): 200,000 accounts, 200,000 transactions,
100,000 positions, 200,000 staff audit entries, 200,000 webhook events and as many
attempts, 200,000 nonce accounts, 200,000 lookup tables, 20,000 vaults, 200,000 loans and
200,000 data source evaluations (bench/bench_admin_areas.py) in PostgreSQL across 20
tenants. ``BENCH_ADMIN_ONLY=areas`` seeds and measures loans and market data alone (with
the tenants, wallets and instruments they need).

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
POOL = 200  # the platform's durable nonce pool
REPEAT = 15
TARGET_P50_MS = 300
#: "areas": loans and market data alone
ONLY = os.environ.get("BENCH_ADMIN_ONLY", "")


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
    from transactions.models import Transaction, TransactionSigner

    rnd = random.Random(18)
    now = timezone.now()
    address = lambda: str(Pubkey(rnd.randbytes(32)))  # noqa: E731
    tenants = [TenantOrganization.objects.create(external_id=f"T{t:02d}", name=f"Tenant {t}") for t in range(TENANTS)]
    statuses = ["FINALIZED"] * 90 + ["CONFIRMED"] * 4 + ["SUBMITTED"] * 3 + ["PENDING_APPROVAL", "FAILED", "EXPIRED"]
    payers = [address() for _ in range(ROWS // 100)]  # each signs ~100 transactions
    txs = [Transaction(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", operation=rnd.choice(["positions.transfer", "positions.mint", "accounts.create"]),
                       status=rnd.choice(statuses), message=b"", blockhash="x", fee_payer=payers[i % len(payers)], required_signers=[payers[i % len(payers)]],
                       onchain_id=str(Signature(rnd.randbytes(64)))) for i in range(ROWS)]
    if ONLY == "areas":
        txs = []
    Transaction.unscoped.bulk_create(txs, batch_size=1000)
    TransactionSigner.objects.bulk_create([TransactionSigner(transaction=tx, address=tx.fee_payer, position=0) for tx in txs], batch_size=2000)
    Transaction.unscoped.update(txn_timestamp=now - timedelta(days=3))  # auto_now_add: spread below
    with django.db.connection.cursor() as cursor:
        cursor.execute("UPDATE transactions_transaction SET txn_timestamp = txn_timestamp + (id % 259200) * interval '1 second'")
    wallets = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="WALLET", name=f"account {i}", code=f"C{i}",
                       lamports_balance=rnd.randint(0, 10**12)) for i in range(ROWS // 2 if ONLY != "areas" else ROWS // 100)]
    Account.unscoped.bulk_create(wallets, batch_size=1000)
    mints = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="ASSET_TOKEN") for i in range(100)]
    Account.unscoped.bulk_create(mints)
    instruments = FinancialInstrument.unscoped.bulk_create([
        FinancialInstrument(tenant=m.tenant, cluster="CHAIN_LOCALNET", mint_account=m, address=m.address, version="TOKEN_2022", al_id=f"ALFICBD{i:08d}",
                            al_category="FIXED_INCOME", al_type="CORPORATE_BOND", symbol=f"B{i}", decimals=2) for i, m in enumerate(mints)])
    holdings = [Account(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), type="ASSET_TOKEN_ACCOUNT", token_balance=rnd.randint(0, 10**6), token_decimals=2)
                for i in range(ROWS // 2 - 100)]
    if ONLY == "areas":
        from bench.bench_admin_areas import seed_loans_and_market_data

        instruments_by_tenant = {}
        for ins in instruments:
            instruments_by_tenant.setdefault(ins.tenant_id, []).append(ins)
        return {"year": now.year, "month": now.month, **seed_loans_and_market_data(ROWS, rnd, now, address, tenants, wallets, instruments_by_tenant, txs)}
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
    found = {"account": wallets[ROWS // 4].address, "position": positions[len(positions) // 3].address, "signature": txs[ROWS // 3].onchain_id,
             "year": now.year, "month": now.month, "payer": payers[7]}
    found.update(seed_phase_b(rnd, now, address, tenants, txs, wallets, positions, instruments_by_tenant))
    from bench.bench_admin_areas import seed_loans_and_market_data

    found.update(seed_loans_and_market_data(ROWS, rnd, now, address, tenants, wallets, instruments_by_tenant, txs))
    return found


def seed_nonce_accounts(address, now, txs, accounts) -> list:
    """The platform's pool (POOL accounts, a tenth leased) and tenants' own nonce accounts,
    one per account record (``accounts``)."""
    from custody.services import managed_key_generate
    from transactions.models import NonceAccount

    pool_key = managed_key_generate()
    nonces = [NonceAccount(cluster="CHAIN_LOCALNET", address=address(), authority=pool_key.public_key, authority_key=pool_key, state="READY",
                           leased_by=txs[i] if i % 10 == 0 else None, leased_at=now if i % 10 == 0 else None) for i in range(POOL)]
    nonces += [NonceAccount(cluster="CHAIN_LOCALNET", address=a.address, tenant_id=a.tenant_id, account=a, authority=address(), state="READY") for a in accounts]
    NonceAccount.objects.bulk_create(nonces, batch_size=2000)
    return nonces


def seed_phase_b(rnd, now, address, tenants, txs, wallets, positions, instruments_by_tenant) -> dict:
    """Webhook events (the outbox) and their attempts, subscriptions, nonce accounts, lookup
    tables and vaults; a transaction with a real message for its page."""
    import uuid
    from datetime import timedelta

    from django.db import connection
    from solders.hash import Hash
    from solders.message import MessageV0, to_bytes_versioned
    from solders.pubkey import Pubkey
    from solders.system_program import TransferParams, transfer

    from accounts.models import Account
    from lookup_tables.models import AddressLookupTable
    from transactions.models import Transaction
    from webhooks.models import WebhookAttempt, WebhookEvent, WebhookSubscription
    from vaults.models import Vault

    subs = WebhookSubscription.unscoped.bulk_create([WebhookSubscription(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", name=f"hook {i}",
                                                                         endpoint_url=f"https://hooks.example/{i}", post_submit=True) for i in range(10 * TENANTS)])
    statuses = ["DELIVERED"] * 95 + ["PENDING"] * 3 + ["DEAD"] * 2
    events = []
    for i in range(ROWS):
        tx, status = txs[i], rnd.choice(statuses)
        events.append(WebhookEvent(tenant_id=tx.tenant_id, cluster="CHAIN_LOCALNET", event_id=uuid.UUID(bytes=rnd.randbytes(16)), subscription=subs[i % len(subs)],
                                   event_type="transaction.post_submit", subject=f"transaction:{tx.offchain_id}", body='{"type":"transaction.post_submit","data":{}}' + " " * 300,
                                   occurred_at=now, next_attempt_at=now, retry_from=now, status=status, attempts=1 if status == "DELIVERED" else 20,
                                   delivered_at=now if status == "DELIVERED" else None, dead_at=now if status == "DEAD" else None, last_status_code=200 if status == "DELIVERED" else 503))
    WebhookEvent.unscoped.bulk_create(events, batch_size=1000)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE transactions_webhookevent SET created_at = now() - (id % 259200) * interval '1 second'")
    WebhookAttempt.objects.bulk_create([WebhookAttempt(event=e, number=1, started_at=now - timedelta(seconds=ROWS - i), latency_ms=rnd.randint(5, 400),
                                                       status_code=e.last_status_code) for i, e in enumerate(events)], batch_size=2000)

    nonces = seed_nonce_accounts(address, now, txs, Account.unscoped.order_by("pk")[:ROWS - POOL])
    tables = AddressLookupTable.unscoped.bulk_create([AddressLookupTable(tenant=tenants[i % TENANTS], cluster="CHAIN_LOCALNET", address=address(), authority=address(),
                                                                state=rnd.choice(["ACTIVE"] * 8 + ["FROZEN", "DEACTIVATED"]), addresses=[address() for _ in range(3)],
                                                                addresses_count=3, last_extended_slot=1) for i in range(ROWS)], batch_size=2000)
    owners = {}
    for w in wallets:
        owners.setdefault(w.tenant_id, w)
    vaults = []
    for i, position in enumerate(positions[:ROWS // 10]):
        kinds = instruments_by_tenant[position.tenant_id]
        vaults.append(Vault(tenant_id=position.tenant_id, cluster="CHAIN_LOCALNET", offchain_id=position.offchain_id, loan_instrument=kinds[0], payment_instrument=kinds[1],
                            position=position, authority_account=owners[position.tenant_id], program_address=address(), authority_address=address(), state_address=address(),
                            token_address=position.address, token_program=address(), admin_address=address(), capacity=4, status=rnd.choice(["ACTIVE"] * 9 + ["CLOSED"])))
    Vault.unscoped.bulk_create(vaults, batch_size=2000)

    payer, source = Pubkey.from_string(wallets[1].address), Pubkey.from_string(wallets[2].address)
    message = MessageV0.try_compile(payer, [transfer(TransferParams(from_pubkey=source, to_pubkey=Pubkey.from_string(wallets[3].address), lamports=4242))], [], Hash.default())
    detailed = txs[ROWS // 5]
    Transaction.unscoped.filter(pk=detailed.pk).update(message=to_bytes_versioned(message), required_signers=[str(payer), str(source)],
                                                      signatures={str(payer): detailed.onchain_id}, effects={"account": str(wallets[2].offchain_id)})
    return {"transaction_pk": detailed.pk, "transaction_offchain_id": str(detailed.offchain_id), "event_id": str(events[ROWS // 3].event_id),
            "nonce": nonces[ROWS // 3].address, "vault_token": vaults[len(vaults) // 2].token_address, "lookup_table": tables[ROWS // 3].address}


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
    pages = [] if ONLY == "areas" else [
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
        ("transactions_by_signer", f"/admin/transactions/transaction/?signer={found['payer']}"),
        ("transactions_stuck", "/admin/transactions/transaction/?stuck=60"),
        ("transaction_page", f"/admin/transactions/transaction/{found['transaction_pk']}/change/"),
        ("webhook_events", "/admin/webhooks/webhookevent/"),
        ("webhook_events_dead", "/admin/webhooks/webhookevent/?status__exact=DEAD"),
        ("webhook_events_by_id", f"/admin/webhooks/webhookevent/?q={found['event_id']}"),
        ("webhook_events_of_transaction", f"/admin/webhooks/webhookevent/?subject__exact=transaction:{found['transaction_offchain_id']}"),
        ("webhook_events_this_month", f"/admin/webhooks/webhookevent/?created_at__year={found['year']}&created_at__month={found['month']}"),
        ("webhook_attempts", "/admin/webhooks/webhookattempt/"),
        ("webhook_subscriptions", "/admin/webhooks/webhooksubscription/"),
        ("nonce_accounts", "/admin/transactions/nonceaccount/"),
        ("nonce_accounts_of_tenants", "/admin/transactions/nonceaccount/?owner=tenant"),
        ("nonce_accounts_by_address", f"/admin/transactions/nonceaccount/?q={found['nonce']}"),
        ("lookup_tables", "/admin/lookup_tables/addresslookuptable/"),
        ("lookup_tables_frozen", "/admin/lookup_tables/addresslookuptable/?state__exact=FROZEN"),
        ("lookup_tables_by_address", f"/admin/lookup_tables/addresslookuptable/?q={found['lookup_table']}"),
        ("vaults", "/admin/vaults/vault/"),
        ("vaults_closed", "/admin/vaults/vault/?status__exact=CLOSED"),
        ("vaults_by_token_address", f"/admin/vaults/vault/?q={found['vault_token']}"),
    ]
    from bench.bench_admin_areas import pages as area_pages

    pages += area_pages(found)
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
