"""make bench: run every benchmark in bench/ and print one JSON line each."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = ["bench_api.py", "bench_localnet.py", "bench_accounts.py", "bench_instruments.py", "bench_transactions.py", "bench_e2e.py", "bench_batch.py",
           "bench_drain.py", "bench_frost.py", "bench_admin.py", "bench_webhooks.py", "bench_marketdata.py", "bench_metrics.py", "bench_faults.py"]

failed = 0
for name in BENCHES:
    result = subprocess.run([sys.executable, str(HERE / name)], capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        failed += 1
        print(f'{{"bench": "{name}", "error": "exit {result.returncode}"}}')
        sys.stderr.write(result.stderr[-2000:])
    for line in lines:
        print(line, flush=True)
sys.exit(1 if failed else 0)
