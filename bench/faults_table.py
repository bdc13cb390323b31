"""The fault campaign's JSON lines (bench/bench_faults.py) as the Markdown table of
docs/chain.md, "The fault campaign":

    .venv/bin/python bench/bench_faults.py --ops 300 > faults.jsonl; .venv/bin/python bench/faults_table.py faults.jsonl
"""

from __future__ import annotations

import json
import sys

COLUMNS = ("setup", "profile", "accepted", "terminal", "confirmed", "expired", "failed", "resigned", "api_5xx", "api_503_retry_after",
           "refused_429", "calls_over_budget", "two_bytes_signatures", "effects_twice", "reconcile_drift", "transfers_confirmed_share", "payroll", "seconds")


def cell(row: dict, column: str) -> str:
    if column == "refused_429":
        return str(sum(b["refused_429"] for b in row.get("budgets", {}).values()))
    if column == "terminal":
        return f"{row['terminal']}/{row['transactions']}"
    if column == "payroll":
        p = row.get("payroll") or {}
        use = f", use {p['budget_use']}" if p.get("budget_use") is not None else ""
        return f"{p.get('transactions')} tx, {p.get('sends_per_s')}/s{use}" if p else "-"
    if column == "seconds":
        s = row["seconds"]
        return f"{s['setup']}+{s['operations']}+{s['settle']}"
    value = row.get(column)
    return "-" if value is None else str(value)


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        if "error" in row:
            print(f"| {row['setup']} | {row['profile']} | error: {row['error'][:120]} |" + " |" * (len(COLUMNS) - 3))
        else:
            print("| " + " | ".join(cell(row, c) for c in COLUMNS) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
