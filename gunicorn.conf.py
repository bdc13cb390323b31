"""gunicorn settings for the API (make run, benchmarks; production may override by env).

The request path is CPU-bound Python: a few more processes than cores, two threads each,
beats many threads in few processes (threads queue on one GIL). Measured in
bench/bench_accounts.py on 2 cores.
"""

import multiprocessing
import os

workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2))
threads = int(os.environ.get("GUNICORN_THREADS", 2))
worker_class = "gthread"
keepalive = 30
max_requests = 20000
max_requests_jitter = 2000

if os.environ.get("GUNICORN_GC_FREEZE", "1") == "1":
    # Load Django once in the master and move everything it allocated out of the
    # collector's view before forking: collections then scan only per-request garbage,
    # which keeps GC pauses out of the latency tail (and pages stay shared between workers).
    import gc

    preload_app = True

    def pre_fork(server, worker):
        gc.freeze()
