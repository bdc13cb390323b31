"""Transaction history at scale: 100,000 transactions of one organization in PostgreSQL
(and 10,000 of another), seeded directly (no chain), read through the HTTP API.

Fetch Transactions, filtered and sorted pages of 100 under gunicorn (target for the
filtered, sorted page: p50 < 50 ms, the accounts issue's bulk target), at concurrency 8
(as bench_accounts) and 1, next to the same page through the selector without HTTP; and
Fetch Transaction Details of single transactions. Prints one JSON line per measurement.
Uses a throwaway database on the PostgreSQL server of DATABASE_URL (default: the local
one). Seeds rows for two tenants at once, so it writes through ``Model.unscoped``.
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
from bench.common import gunicorn, manage, orm_page_ms, throwaway_database, vacuum_analyze, wrk_load  # noqa: E402
from bench.loadgen import closed_loop as load  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402

TRANSACTIONS = int(os.environ.get("BENCH_TRANSACTIONS", "100000"))
OTHER_TENANT_TRANSACTIONS = TRANSACTIONS // 10
WALLETS = 2000
DURATION = float(os.environ.get("BENCH_DURATION", "8"))


def _filter(field: str, data_type: str, **value) -> dict:
    return {"fieldName": field, "filterValues": [{"dataType": data_type, **value}]}


#: The target: a filtered, sorted page of 100 (about 45 % of the tenant's rows match).
PAGE_QUERY = {"limit": 100, "filter": [
    _filter("status", "TEXT", filterType="IN", valuesString=["CONFIRMED", "FINALIZED"]),
    _filter("operation", "TEXT", valueString="positions.transfer")],
    "sort": [{"fieldName": "txnTimestamp", "sortDirection": "DESC"}]}


def other_queries(data: dict) -> dict[str, tuple[str, dict]]:
    """More pages people ask for: one wallet's history (a rare signer), every transaction
    the platform fee payer signed (nearly all), one API key's last week."""
    return {
        "signer_wallet_detailed": ("detailed", {"limit": 100, "filter": [_filter("signer", "ONCHAIN_ADDRESS_ID", valueString=data["wallet"])],
                                                "sort": [{"fieldName": "txnTimestamp", "sortDirection": "DESC"}]}),
        "signer_fee_payer_compact": ("compact", {"limit": 100, "filter": [_filter("signer", "ONCHAIN_ADDRESS_ID", valueString=data["fee_payer"])]}),
        "key_last_week_identifiers": ("identifiers", {"limit": 100, "filter": [
            _filter("createdByKey", "TEXT", valueString=data["key_id"]),
            _filter("txnTimestamp", "TIMESTAMP", filterType="RANGE", valueFromString=data["week_ago"])],
            "sort": [{"fieldName": "txnTimestamp", "sortDirection": "DESC"}]}),
    }


def seed(env: dict) -> dict:
    """Two tenants, their keys and transactions (with signer rows), in bulk through the ORM."""
    code = f"""
import json, random, datetime, uuid
import django; django.setup()
from django.utils import timezone
from solders.hash import Hash
from solders.keypair import Keypair
from solders.signature import Signature
from solders.message import MessageV0, to_bytes_versioned
from solders.system_program import TransferParams, transfer
from solders.compute_budget import set_compute_unit_limit
from tenancy.models import TenantOrganization
from tenancy.services import api_key_create
from transactions.models import Transaction, TransactionSigner

rnd = random.Random(7)
fee_payer = Keypair().pubkey()
wallets = [Keypair().pubkey() for _ in range({WALLETS})]
messages = {{}}
def message(wallet):
    raw = messages.get(wallet)
    if raw is None:
        ixs = [set_compute_unit_limit(20_000), transfer(TransferParams(from_pubkey=wallet, to_pubkey=Keypair().pubkey(), lamports=1_000_000))]
        raw = messages[wallet] = to_bytes_versioned(MessageV0.try_compile(fee_payer, ixs, [], Hash.new_unique()))
    return raw
mint = str(Keypair().pubkey())
def effects(wallet):
    # The shape a Transfer Financial Instrument records (positions/movement.py _effects).
    return {{"positions": [str(uuid.uuid4()), str(uuid.uuid4())], "created": [], "movement": {{"kind": "TRANSFER", "reference": str(Keypair().pubkey()), "legs": [
        {{"instrument": str(uuid.uuid4()), "mint": mint, "amount": str(rnd.randrange(10**9)), "decimals": 2, "authority": str(wallet),
          "source": {{"owner": str(wallet)}}, "destination": {{"owner": str(Keypair().pubkey())}}}}]}}}}
STATUSES = ["FINALIZED"] * 85 + ["CONFIRMED"] * 5 + ["FAILED"] * 4 + ["EXPIRED"] * 3 + ["PENDING_APPROVAL"] * 2 + ["SIGNED"]
OPERATIONS = ["positions.transfer"] * 50 + ["positions.transfer_network_currency"] * 15 + ["accounts.create"] * 15 + ["positions.mint"] * 10 + ["instruments.create"] * 5 + ["positions.initialize"] * 5
LOGS = ["Program ComputeBudget111111111111111111111111111111 invoke [1]", "Program ComputeBudget111111111111111111111111111111 success",
        "Program 11111111111111111111111111111111 invoke [1]", "Program 11111111111111111111111111111111 success"]
now = timezone.now()
out = {{"keys": {{}}, "fee_payer": str(fee_payer), "wallet": str(wallets[0]), "ids": []}}
for external_id, count in (("T00", {TRANSACTIONS}), ("T01", {OTHER_TENANT_TRANSACTIONS})):
    tenant = TenantOrganization.objects.create(external_id=external_id, name=external_id)
    keys = [api_key_create(organization=tenant, rate_limit_per_minute=0) for _ in range(3)]
    out["keys"][external_id] = keys[0].secret
    if external_id == "T00":
        out["key_id"] = keys[0].api_key.key_id
    for start in range(0, count, 5000):
        rows, signers = [], []
        for i in range(start, min(count, start + 5000)):
            wallet = wallets[rnd.randrange(len(wallets))]
            own_fee = rnd.random() < 0.1
            status = rnd.choice(STATUSES)
            landed = status in ("FINALIZED", "CONFIRMED", "FAILED")
            at = now - datetime.timedelta(seconds=30 * 86400 * i / count)
            rows.append(Transaction(
                tenant=tenant, cluster="CHAIN_LOCALNET", status=status, operation=rnd.choice(OPERATIONS), effects=effects(wallet), created_by_key=keys[i % 3].api_key,
                onchain_id=str(Signature.from_bytes(rnd.randbytes(64))), message=message(wallet), blockhash=str(Hash.default()), last_valid_block_height=1000 + i,
                fee_payer=str(wallet) if own_fee else str(fee_payer), required_signers=[str(wallet)] if own_fee else [str(fee_payer), str(wallet)],
                signatures={{s: str(Signature.from_bytes(rnd.randbytes(64))) for s in ([str(wallet)] if own_fee else [str(fee_payer), str(wallet)])}},
                approval_required=status == "PENDING_APPROVAL", confirmations_count=32 if landed else None,
                slot=10_000 + i if landed else None, confirmed_at=at + datetime.timedelta(seconds=2) if landed else None,
                fee=5000 if landed else None, compute_units_consumed=450 if landed else None, log_messages=LOGS if landed else None,
                block_time=at if landed else None,
            ))
        Transaction.unscoped.bulk_create(rows, batch_size=1000)
        for tx in rows:
            signers += [TransactionSigner(transaction_id=tx.pk, address=a, position=p) for p, a in enumerate(tx.required_signers)]
        TransactionSigner.objects.bulk_create(signers, batch_size=5000)
        # txn_timestamp is auto_now_add: spread over 30 days afterwards, in one statement per batch.
        from django.db import connection
        with connection.cursor() as cursor:
            cursor.execute("UPDATE transactions_transaction SET txn_timestamp = confirmed_at - interval '2 seconds' WHERE id = ANY(%s) AND confirmed_at IS NOT NULL", [[tx.pk for tx in rows]])
            cursor.execute("UPDATE transactions_transaction SET txn_timestamp = %s::timestamptz - (id - %s) * interval '1 second' * %s WHERE id = ANY(%s) AND confirmed_at IS NULL",
                           [now, rows[0].pk, 30 * 86400 / count, [tx.pk for tx in rows]])
        if external_id == "T00":
            out["ids"] += [str(tx.offchain_id) for tx in rnd.sample(rows, 40)]
out["week_ago"] = (now - datetime.timedelta(days=7)).isoformat()
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"seeding failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def orm_page(*, queryset, cluster, item_query):
    """bench.common.orm_page_ms's selector: the page and its rendering, without HTTP."""
    from transactions.details import transaction_details
    from transactions.selectors import transaction_list

    rows, count = transaction_list(queryset=queryset, item_query=item_query, level="detailed")
    return [transaction_details(row) for row in rows], count


def _lua_body(secret: str, body: str) -> str:
    body = body.replace('"', '\\"')
    return f'wrk.method = "POST"\nwrk.body = "{body}"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer {secret}"\n'


def _lua_details(secret: str, ids: list[str]) -> str:
    rows = "".join(f'ids[{i + 1}] = "{offchain_id}"\n' for i, offchain_id in enumerate(ids))
    return ("local ids = {}\n" + rows + """
local n = 0
request = function()
  n = n % #ids + 1
  return wrk.format("POST", "/api/v1/transactions/single", {["Authorization"]="Bearer SECRET", ["Content-Type"]="application/json"}, '{"itemData":{"transaction":{"offchainId":"' .. ids[n] .. '"}}}')
end
""".replace("SECRET", secret))


def measure(port: int, data: dict, common: dict, sql_ms: float) -> None:
    secret = data["keys"]["T00"]
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def run(path: str, body_for, script: str, concurrency: int) -> dict:
        """wrk when installed (it leaves the cores to the server), else the Python load generator."""
        return wrk_load(port, script, path, concurrency, DURATION) or {"load_generator": "python", **load(port, lambda rnd: ("POST", path, body_for(rnd), headers), concurrency, DURATION)}

    def page(level: str, query: dict, concurrency: int) -> dict:
        body = json.dumps({"itemQuery": query})
        return run(f"/api/v1/transactions/bulk/{level}", lambda rnd: body, _lua_body(secret, body), concurrency)

    target = json.dumps({"itemQuery": PAGE_QUERY})
    wait_until_up(port, ("POST", "/api/v1/transactions/bulk/detailed", target, headers))
    load(port, lambda rnd: ("POST", "/api/v1/transactions/bulk/detailed", target, headers), 8, 2.0)  # warm-up: connections, caches, prepared statements
    # The machine's load when measuring: on a shared 2-core host other work inflates every figure.
    common = {"transactions": TRANSACTIONS, "other_tenant_transactions": OTHER_TENANT_TRANSACTIONS, "database": "postgresql", "loadavg_1m_at_start": round(os.getloadavg()[0], 2), **common}
    for concurrency in (8, 1):
        for level in ("detailed", "compact"):
            extra = {"target_p50_ms": 50, "raw_orm_p50_ms": round(sql_ms, 2)} if level == "detailed" else {}
            print(json.dumps({"bench": f"transactions_bulk_page_100_{level}", "concurrency": concurrency, **common, **page(level, PAGE_QUERY, concurrency), **extra}), flush=True)
    for name, (level, query) in other_queries(data).items():
        print(json.dumps({"bench": f"transactions_bulk_{name}", "concurrency": 8, **common, **page(level, query, 8)}), flush=True)
    details = run("/api/v1/transactions/single", lambda rnd: json.dumps({"itemData": {"transaction": {"offchainId": rnd.choice(data["ids"])}}}), _lua_details(secret, data["ids"]), 8)
    print(json.dumps({"bench": "transactions_fetch_details", "concurrency": 8, **common, **details}), flush=True)


def main() -> None:
    with throwaway_database() as db_url:
        env = {**os.environ, "DATABASE_URL": db_url, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings"}
        env.pop("REDIS_URL", None)
        manage(env, "migrate", "--noinput", "-v0")
        started = time.perf_counter()
        data = seed(env)
        seed_seconds = time.perf_counter() - started
        vacuum_analyze(db_url)
        sql_ms = orm_page_ms(env, "T00", "bench.bench_transactions:orm_page", PAGE_QUERY, "transactions.Transaction")
        port = free_port()
        server = gunicorn(env, port)
        try:
            measure(port, data, {"seed_seconds": round(seed_seconds, 1)}, sql_ms)
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
