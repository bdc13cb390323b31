"""CPU time per component of a running stack, read from /proc (Linux).

A benchmark samples it before and after a measurement; the difference divided by the
operations confirmed says where each operation's CPU went (web tier, worker, node,
database server, load generator) and bounds the rate the machine can reach at all:
cores × 1000 / (CPU ms per operation).
"""

from __future__ import annotations

import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, comm, utime + stime in ticks) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    return int(fields[1]), comm, int(fields[11]) + int(fields[12])


def _table() -> dict[int, tuple[int, str, int]]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            row = _stat(int(name))
            if row:
                table[int(name)] = row
    return table


def machine_busy_ms() -> float:
    """All cores' non-idle time since boot, in ms."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) * 1000 / TICK


def sample(roots: dict[str, int], by_name: dict[str, str] | None = None, alone: dict[str, int] | None = None) -> dict[str, float]:
    """CPU ms used so far by each component: ``roots`` name → pid (the process and its
    live descendants), ``by_name`` name → process name (every process so named, e.g. the
    PostgreSQL server's backends), ``alone`` name → pid (that process only, e.g. the load
    generator whose children are the stack), plus ``machine`` (every core's busy time)."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[str, float] = {}
    for label, root in roots.items():
        total, stack = 0, [root]
        while stack:
            pid = stack.pop()
            if pid in table:
                total += table[pid][2]
            stack.extend(children.get(pid, ()))
        out[label] = total * 1000 / TICK
    for label, pid in (alone or {}).items():
        out[label] = table[pid][2] * 1000 / TICK if pid in table else 0.0
    for label, comm in (by_name or {}).items():
        out[label] = sum(t for _, c, t in table.values() if c == comm) * 1000 / TICK
    out["machine"] = machine_busy_ms()
    return out


def per_operation(before: dict[str, float], after: dict[str, float], operations: int) -> dict[str, float]:
    """CPU ms per operation by component, the rest of the machine as ``other``."""
    if not operations:
        return {}
    spent = {k: (after[k] - before[k]) / operations for k in after}
    machine = spent.pop("machine")
    out = {k: round(v, 2) for k, v in spent.items()}
    out["other"] = round(max(0.0, machine - sum(spent.values())), 2)
    out["total"] = round(machine, 2)
    return out
