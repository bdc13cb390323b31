"""Seeding and pages of bench/bench_admin.py for loans and market data (issue 18): 200,000
loans (each with its escrow account record) across 200 strategies, and 200,000 data source
evaluations across 100 data sources, in bulk through the ORM."""

from __future__ import annotations

from datetime import timedelta

STRATEGIES = 200
SOURCES = 100  # one live PRICE source per instrument


def seed_loans_and_market_data(rows: int, rnd, now, address, tenants, wallets, instruments_by_tenant, txs) -> dict:
    """``wallets``: account records to borrow and lend; ``txs``: transactions the confirmed
    evaluations name as their update (may be empty). Returns the identifiers the pages
    look for."""
    from django.db import connection

    from accounts.models import Account
    from loans.models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStrategy
    from marketdata.models import DataSourceEvaluation, OnchainDataSource

    program = address()
    by_tenant: dict = {}
    for w in wallets:
        by_tenant.setdefault(w.tenant_id, []).append(w)
    tenant_ids = sorted(by_tenant)
    strategy_accounts = Account.unscoped.bulk_create([Account(tenant_id=tenant_ids[i % len(tenant_ids)], cluster="CHAIN_LOCALNET", address=address(), type="VAULT")
                                                      for i in range(STRATEGIES)])
    strategies = LoanStrategy.unscoped.bulk_create([
        LoanStrategy(tenant_id=a.tenant_id, cluster="CHAIN_LOCALNET", offchain_id=a.offchain_id, address=a.address, program_address=program, strategy_id=i, account=a,
                     lender=by_tenant[a.tenant_id][i % 7], lender_address=by_tenant[a.tenant_id][i % 7].address, oracle_program_address=program, apy_bps=1_000,
                     ltv_bps=5_000, liquidation_bps=8_000, duration_unit=30, status="ACTIVE") for i, a in enumerate(strategy_accounts)])
    strategies_by_tenant: dict = {}
    for s in strategies:
        strategies_by_tenant.setdefault(s.tenant_id, []).append(s)
    escrows = Account.unscoped.bulk_create([Account(tenant_id=tenant_ids[i % len(tenant_ids)], cluster="CHAIN_LOCALNET", address=address(), type="LOAN_ESCROW")
                                            for i in range(rows)], batch_size=2000)
    statuses = ["ACTIVE"] * 60 + ["CLOSED"] * 30 + ["REPAID"] * 6 + ["LIQUIDATED"] * 2 + ["PENDING", "FAILED"]
    loans = []
    for i, escrow in enumerate(escrows):
        borrower = by_tenant[escrow.tenant_id][(i // len(tenant_ids)) % len(by_tenant[escrow.tenant_id])]
        strategy = strategies_by_tenant[escrow.tenant_id][i % len(strategies_by_tenant[escrow.tenant_id])]
        loans.append(Loan(tenant_id=escrow.tenant_id, cluster="CHAIN_LOCALNET", offchain_id=escrow.offchain_id, escrow_address=escrow.address, program_address=program,
                          nonce=i, escrow_account=escrow, borrower=borrower, borrower_address=borrower.address, strategy_address=strategy.address, strategy=strategy,
                          lender_id=strategy.lender_id, lender_address=strategy.lender_address, status=rnd.choice(statuses), apy_bps=1_000, ltv_bps=5_000,
                          liquidation_bps=8_000, duration_unit=30, start_time=now, due_time=now + timedelta(days=30), last_interest_update_time=now,
                          flagged_at=now if i % 500 == 0 else None))
    Loan.unscoped.bulk_create(loans, batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE loans_loan SET created_at = now() - (id % 259200) * interval '1 second'")
    shown = loans[rows // 3]
    kinds = instruments_by_tenant[shown.tenant_id]
    LoanPledgedItem.objects.create(loan=shown, index=0, mint_address=kinds[0].address, instrument=kinds[0], token_account_address=address(), amount=10**8, pledged_amount=10**6)
    LoanBorrowedItem.objects.create(loan=shown, index=0, mint_address=kinds[1].address, instrument=kinds[1], principal=40_000, due_amount=400)

    instruments = [ins for kinds in instruments_by_tenant.values() for ins in kinds][:SOURCES]
    sources = OnchainDataSource.unscoped.bulk_create([
        OnchainDataSource(tenant_id=ins.tenant_id, cluster="CHAIN_LOCALNET", address=address(), program_address=program, instrument=ins, mint_address=ins.address,
                          authority_address=by_tenant[ins.tenant_id][0].address, authority_account=by_tenant[ins.tenant_id][0], job_definition="{}", job_hash="0" * 64,
                          exponent=-8, max_staleness_seconds=300, status="ACTIVE", onchain_round=rows // SOURCES, onchain_value=12_50000000) for ins in instruments])
    outcomes = ["CONFIRMED"] * 90 + ["FAILED"] * 6 + ["NOT_LANDED"] * 2 + ["REJECTED"] * 2
    evaluations = []
    for i in range(rows):
        source, status = sources[i % SOURCES], rnd.choice(outcomes)
        written = status != "FAILED"
        evaluations.append(DataSourceEvaluation(tenant_id=source.tenant_id, cluster="CHAIN_LOCALNET", data_source=source, trigger=rnd.choice(["SCHEDULE"] * 18 + ["API", "ADMIN"]),
                                                status=status, job_hash=source.job_hash, started_at=now, finished_at=now, mantissa=rnd.randint(10**8, 10**10) if written else None,
                                                round=i // SOURCES + 1 if written else None, record={"ok": written, "sources": []},
                                                error="" if written else "prices.example: 503", transaction=txs[i] if written and i < len(txs) else None))
    DataSourceEvaluation.unscoped.bulk_create(evaluations, batch_size=2000)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE marketdata_datasourceevaluation SET created_at = now() - (id % 259200) * interval '1 second'")
    OnchainDataSource.unscoped.filter(pk=sources[0].pk).update(last_evaluation=evaluations[-SOURCES])
    return {"loan_pk": shown.pk, "escrow": shown.escrow_address, "borrower": shown.borrower_address, "loan_offchain_id": str(shown.offchain_id),
            "strategy_pk": shown.strategy_id, "strategy_address": shown.strategy_address, "source_pk": sources[0].pk, "source_address": sources[0].address,
            "evaluation_pk": evaluations[rows // 2].pk}


def pages(found: dict) -> list[tuple[str, str]]:
    year, month = found["year"], found["month"]
    loans, evaluations = "/admin/loans/loan/", "/admin/marketdata/datasourceevaluation/"
    return [
        ("loans", loans),
        ("loans_liquidated", f"{loans}?status__exact=LIQUIDATED"),
        ("loans_flagged", f"{loans}?flagged_at__isempty=0"),
        ("loans_of_strategy", f"{loans}?strategy__id__exact={found['strategy_pk']}"),
        ("loans_by_strategy_address", f"{loans}?strategy_address={found['strategy_address']}"),
        ("loans_by_escrow", f"{loans}?q={found['escrow']}"),
        ("loans_by_borrower", f"{loans}?q={found['borrower']}"),
        ("loans_by_offchain_id", f"{loans}?q={found['loan_offchain_id']}"),
        ("loans_this_month", f"{loans}?created_at__year={year}&created_at__month={month}"),
        ("loan_page", f"{loans}{found['loan_pk']}/change/"),
        ("loan_strategies", "/admin/loans/loanstrategy/"),
        ("data_sources", "/admin/marketdata/onchaindatasource/"),
        ("data_source_page", f"/admin/marketdata/onchaindatasource/{found['source_pk']}/change/"),
        ("evaluations", evaluations),
        ("evaluations_failed", f"{evaluations}?status__exact=FAILED"),
        ("evaluations_of_source", f"{evaluations}?data_source__id__exact={found['source_pk']}"),
        ("evaluations_by_source_address", f"{evaluations}?q={found['source_address']}"),
        ("evaluations_this_month", f"{evaluations}?created_at__year={year}&created_at__month={month}"),
        ("evaluation_page", f"{evaluations}{found['evaluation_pk']}/change/"),
    ]
