"""Closed-loop HTTP load from Python threads (the fallback when wrk is not installed)."""

from __future__ import annotations

import http.client
import random
import statistics
import threading
import time


def closed_loop(port: int, requests_for, concurrency: int, duration: float) -> dict:
    """``concurrency`` keep-alive clients, each sending ``requests_for(rng)`` →
    (method, path, body, headers) back to back for ``duration`` seconds."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + duration

    def client(n: int):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        mine = []
        rnd = random.Random(n)
        while time.monotonic() < stop_at:
            method, path, body, headers = requests_for(rnd)
            started = time.perf_counter()
            conn.request(method, path, body, headers)
            response = conn.getresponse()
            response.read()
            mine.append(time.perf_counter() - started)
            if response.status != 200:
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrency)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    q = statistics.quantiles(latencies, n=100)
    return {"requests": len(latencies), "errors": errors[0], "rps": round(len(latencies) / elapsed, 1), "p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2)}


def wait_until_up(port: int, request, timeout: float = 30.0) -> None:
    """Poll until ``request`` = (method, path, body, headers) answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request(*request)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.2)
