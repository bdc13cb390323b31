"""The dashboard's plots of the last 24 hours (docs/admin.md, "Dashboard"), computed from
the database and drawn server-side as SVG: no time-series store, no script, nothing from a
CDN.

- confirmed transactions per minute, and request → CONFIRMED p50 / p99 per 10 minutes
  (``Transaction.confirmed_at - txn_timestamp``, read over the ``txn_confirmed_at`` index);
- webhook deliveries and failures per 10 minutes (``WebhookAttempt.started_at``, index
  ``whk_attempt_started``);
- each cluster's fee payer balance (the worker's samples, ``BalanceSample``).

Acts for no tenant: every tenant's rows are counted, only numbers are drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, Q
from django.db.models.functions import TruncMinute
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

from transactions.models import Transaction

from .models import BalanceAccount, BalanceSample

DAY = 24 * 3600
STEP = 600  # seconds per bucket of the 10-minute series
COLORS = ("#2e7d32", "#c62828", "#1565c0", "#ef6c00", "#6a1b9a")


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]] = field(default_factory=list)  # (seconds since the start, value)
    kind: str = "line"  # or "bars"


def _floor(now: datetime, step: int) -> datetime:
    return datetime.fromtimestamp(math.floor(now.timestamp() / step) * step, tz=now.tzinfo)


def _bucket(start: datetime, at: datetime, step: int = STEP) -> float:
    return math.floor((at - start).total_seconds() / step) * step


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (PostgreSQL's percentile_cont)."""
    values = sorted(values)
    position = (len(values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return values[low] + (values[high] - values[low]) * (position - low)


def confirmations(start: datetime) -> tuple[Series, Series, Series]:
    per_minute = Series("confirmed / min", kind="bars")
    for row in (Transaction.unscoped.filter(confirmed_at__gte=start).order_by().annotate(minute=TruncMinute("confirmed_at"))
                .values("minute").annotate(n=Count("id")).order_by("minute")):
        per_minute.points.append(((row["minute"] - start).total_seconds(), row["n"]))
    p50, p99 = Series("p50"), Series("p99")
    if connection.vendor == "postgresql":
        table = Transaction._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT floor(extract(epoch FROM confirmed_at - %s) / {STEP}) * {STEP} AS b, "
                "percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM confirmed_at - txn_timestamp)), "
                "percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM confirmed_at - txn_timestamp)) "
                f"FROM {table} WHERE confirmed_at >= %s GROUP BY b ORDER BY b", [start, start])
            for bucket, q50, q99 in cursor.fetchall():
                p50.points.append((float(bucket), float(q50)))
                p99.points.append((float(bucket), float(q99)))
    else:  # SQLite (embedded mode, tests): no percentile aggregate; a day of one machine's traffic
        buckets: dict[float, list[float]] = {}
        for confirmed, built in Transaction.unscoped.filter(confirmed_at__gte=start).order_by().values_list("confirmed_at", "txn_timestamp"):
            buckets.setdefault(_bucket(start, confirmed), []).append((confirmed - built).total_seconds())
        for bucket in sorted(buckets):
            p50.points.append((bucket, _percentile(buckets[bucket], 0.5)))
            p99.points.append((bucket, _percentile(buckets[bucket], 0.99)))
    return per_minute, p50, p99


def deliveries(start: datetime) -> tuple[Series, Series]:
    from webhooks.models import WebhookAttempt

    ok, failed = Series("delivered", kind="bars"), Series("failed", kind="bars")
    delivered = Q(status_code__gte=200, status_code__lt=300)
    counts: dict[float, list[int]] = {}
    for row in (WebhookAttempt.objects.filter(started_at__gte=start).order_by().annotate(minute=TruncMinute("started_at")).values("minute")
                .annotate(ok=Count("id", filter=delivered), all=Count("id"))):
        entry = counts.setdefault(_bucket(start, row["minute"]), [0, 0])
        entry[0] += row["ok"]
        entry[1] += row["all"] - row["ok"]
    for bucket in sorted(counts):
        ok.points.append((bucket, counts[bucket][0]))
        failed.points.append((bucket, counts[bucket][1]))
    return ok, failed


def fee_payer_balances(start: datetime) -> list[Series]:
    """The last sample of each 10 minutes, per cluster, in SOL."""
    last: dict[str, dict[float, float]] = {}
    for cluster, at, lamports in (BalanceSample.objects.filter(account=BalanceAccount.FEE_PAYER, at__gte=start).order_by("at")
                                  .values_list("cluster", "at", "lamports")):
        last.setdefault(cluster, {})[_bucket(start, at)] = float(lamports) / 1e9
    return [Series(cluster, sorted(points.items())) for cluster, points in sorted(last.items())]


def _nice(top: float) -> float:
    if top <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(top))
    for factor in (1, 2, 2.5, 5, 10):
        if top <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _label(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.3g}"


def svg(plot_id: str, title: str, unit: str, series: list[Series], start: datetime, *, width: int = 560, height: int = 170) -> str:
    """One plot: time on x (the 24 h from ``start``), ``unit`` on y from 0; bars or lines
    with a dot per point; a legend. Empty series draw the axes and say "no data"."""
    left, right, top, bottom = 56, 8, 22, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    y_max = _nice(max((v for s in series for _, v in s.points), default=0) * 1.05)
    x = lambda t: left + plot_w * min(max(t, 0), DAY) / DAY  # noqa: E731
    y = lambda v: top + plot_h * (1 - v / y_max)  # noqa: E731
    n = sum(len(s.points) for s in series)
    out = [f'<svg id="{plot_id}" class="plot" data-points="{n}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="100%" role="img" aria-label="{escape(title)}">',
           f'<title>{escape(title)}</title>',
           f'<text x="{left}" y="14" class="plot-title">{escape(title)}</text>']
    for fraction in (0, 0.5, 1):
        value = y_max * fraction
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(value):.1f}" y2="{y(value):.1f}" class="grid"/>'
                   f'<text x="{left - 4}" y="{y(value) + 4:.1f}" text-anchor="end" class="tick">{_label(value)}</text>')
    out.append(f'<text x="4" y="{top + plot_h / 2:.0f}" class="tick" transform="rotate(-90 10 {top + plot_h / 2:.0f})">{escape(unit)}</text>')
    first_tick = _floor(start + timedelta(hours=4), 4 * 3600)
    tick = first_tick
    while tick <= start + timedelta(seconds=DAY):
        at = x((tick - start).total_seconds())
        out.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{top}" y2="{top + plot_h}" class="grid"/>'
                   f'<text x="{at:.1f}" y="{height - 6}" text-anchor="middle" class="tick">{tick:%H:%M}</text>')
        tick += timedelta(hours=4)
    bars = [s for s in series if s.kind == "bars"]
    for index, s in enumerate(series):
        color = COLORS[index % len(COLORS)]
        if s.kind == "bars":
            slot = bars.index(s)
            step = 60 if s.name.endswith("/ min") else STEP
            bar_w = max(1.0, plot_w * step / DAY / len(bars))
            for t, v in s.points:
                out.append(f'<rect class="pt" x="{x(t) + slot * bar_w:.1f}" y="{y(v):.1f}" width="{bar_w:.1f}" height="{max(0.5, y(0) - y(v)):.1f}" '
                           f'fill="{color}"><title>{escape(s.name)}: {_label(v)}</title></rect>')
        else:
            if len(s.points) > 1:
                path = " ".join(f"{x(t + STEP / 2):.1f},{y(v):.1f}" for t, v in s.points)
                out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
            for t, v in s.points:
                out.append(f'<circle class="pt" cx="{x(t + STEP / 2):.1f}" cy="{y(v):.1f}" r="2" fill="{color}"><title>{escape(s.name)}: {_label(v)}</title></circle>')
        out.append(f'<rect x="{width - right - 110}" y="{6 + 12 * index}" width="8" height="8" fill="{color}"/>'
                   f'<text x="{width - right - 98}" y="{14 + 12 * index}" class="tick">{escape(s.name)}</text>')
    if not n:
        out.append(f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h / 2:.0f}" text-anchor="middle" class="tick">no data in the last 24 hours</text>')
    out.append("</svg>")
    return mark_safe("".join(out))


def plots(now: datetime | None = None) -> list[dict]:
    now = now or timezone.now()
    start = _floor(now, STEP) + timedelta(seconds=STEP) - timedelta(seconds=DAY)  # 144 whole buckets, the last one now's
    per_minute, p50, p99 = confirmations(start)
    ok, failed = deliveries(start)
    return [
        {"id": "plot-confirmed", "svg": svg("plot-confirmed", "Confirmed transactions per minute", "per min", [per_minute], start)},
        {"id": "plot-latency", "svg": svg("plot-latency", "Request → CONFIRMED, p50 and p99 per 10 min", "seconds", [p50, p99], start)},
        {"id": "plot-webhooks", "svg": svg("plot-webhooks", "Webhook deliveries and failures per 10 min", "attempts", [ok, failed], start)},
        {"id": "plot-fee-payer", "svg": svg("plot-fee-payer", "Fee payer balance (last sample per 10 min)", "SOL", fee_payer_balances(start), start)},
    ]
