"""Ratios against direct, the printed tables, the issue's goals, and the JSON file."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from .idle import IdleRow
from .large import LargeRow
from .measure import Row
from .paths import PEER_TITLES
from .side import SideRow

GOAL_ADDED_P50_MS = {"http-http": 0.5, "stdio-stdio": 0.3}
GOAL_THROUGHPUT_PCT_C32 = 90.0
GOAL_CPU_MS_PER_CALL = 1.0


def compare_to_direct(rows: Sequence[Row]) -> None:
    """Fill added p50 and throughput % for every measured row whose pair has a direct row."""
    direct = {(r.pair, r.concurrency): r for r in rows if r.peer == "direct" and r.calls}
    for row in rows:
        base = direct.get((row.pair, row.concurrency))
        if row.peer == "direct" or base is None or not row.calls:
            continue
        row.added_p50_ms = round(row.p50_ms - base.p50_ms, 3)
        row.throughput_pct_of_direct = round(100 * row.calls_per_s / base.calls_per_s, 1)


def _cell(value: float | None, spec: str, width: int) -> str:
    return f"{'' if value is None else format(value, spec):>{width}}"


def _pair_breaks(pairs: Sequence[str]) -> list[bool]:
    """Whether a blank line goes before each row: tables group their rows by pair."""
    return [index > 0 and pair != pairs[index - 1] for index, pair in enumerate(pairs)]


def format_main(rows: Sequence[Row]) -> str:
    head = (
        f"{'pair':11} {'path':23} {'conc':>4} {'sess':>4} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} "
        f"{'calls/s':>8} {'thr %':>6} {'+p50 ms':>8} {'x p50':>6} {'cpu/call':>8} {'client':>6} {'upstr':>6} "
        f"{'RSS MB':>7}  era"
    )
    lines = [head, "-" * len(head)]
    for r, gap in zip(rows, _pair_breaks([r.pair for r in rows]), strict=True):
        if gap:
            lines.append("")
        label = f"{r.pair:11} {PEER_TITLES.get(r.peer, r.peer):23} {r.concurrency:>4}"
        if r.failure or not r.calls:
            if r.failure or r.note:
                kind, reason = ("FAILED", r.failure) if r.failure else ("n/a", r.note)
            else:
                kind, reason = "too slow", f"no call finished within twice the row cap ({r.abandoned} abandoned)"
            lines.append(f"{label} {r.sessions or '':>4} {kind}: {str(reason)[:150]}")
            continue
        base_p50 = r.p50_ms - r.added_p50_ms if r.added_p50_ms is not None else None
        ratio = r.p50_ms / base_p50 if base_p50 else None
        errors = f"  {r.errors} ERRORS" if r.errors else ""
        errors += f"  ({r.abandoned} calls abandoned at the cap)" if r.abandoned else ""
        lines.append(
            f"{label} {r.sessions:>4} {r.p50_ms:7.2f} {r.p95_ms:7.2f} {r.p99_ms:7.2f} {r.calls_per_s:8.0f} "
            f"{_cell(r.throughput_pct_of_direct, '.0f', 6)} {_cell(r.added_p50_ms, '+.2f', 8)} "
            f"{_cell(ratio, '.2f', 6)} {_cell(r.cpu_ms_per_call.get('proxy'), '.2f', 8)} "
            f"{_cell(r.cpu_ms_per_call.get('client'), '.2f', 6)} {_cell(r.cpu_ms_per_call.get('upstream'), '.2f', 6)} "
            f"{_cell(r.proxy_rss_peak_mb, '.0f', 7)}  {r.protocol_version or ''}{errors}"
        )
        lines.extend(f"    {error}" for error in r.first_errors)
    return "\n".join(lines)


def format_side(rows: Sequence[SideRow]) -> str:
    head = (
        f"{'pair':11} {'path':23} {'calls':>6} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} "
        f"{'+p50 ms':>8} {'paired +ms':>10} {'errors':>6}"
    )
    lines = [head, "-" * len(head)]
    for r, gap in zip(rows, _pair_breaks([r.pair for r in rows]), strict=True):
        if gap:
            lines.append("")
        label = f"{r.pair:11} {PEER_TITLES.get(r.peer, r.peer):23}"
        if r.failure or not r.calls:
            kind, reason = ("FAILED", r.failure) if r.failure else ("n/a", r.note or "no call succeeded")
            lines.append(f"{label} {kind}: {str(reason)[:150]}")
            continue
        lines.append(
            f"{label} {r.calls:>6} {r.p50_ms:7.2f} {r.p95_ms:7.2f} {r.p99_ms:7.2f} "
            f"{_cell(r.added_p50_ms, '+.2f', 8)} {_cell(r.paired_added_ms, '+.2f', 10)} {r.errors:>6}"
        )
    return "\n".join(lines)


def format_large(rows: Sequence[LargeRow]) -> str:
    head = (
        f"{'path':9} {'pair':11} {'MB':>4} {'seconds':>8} {'next call ms':>12} "
        f"{'RSS before':>10} {'RSS peak':>9}  status"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.peer:9} {r.pair:11} {r.size_mb:>4} {_cell(r.seconds, '.2f', 8)} {_cell(r.next_call_ms, '.1f', 12)} "
            f"{_cell(r.proxy_rss_before_mb, '.0f', 10)} {_cell(r.proxy_rss_peak_mb, '.0f', 9)}  {r.status}"
        )
    return "\n".join(lines)


def format_idle(rows: Sequence[IdleRow]) -> str:
    head = (
        f"{'era':10} {'sessions':>8} {'opened':>6} {'open s':>6} {'errors':>6} {'call p50':>8} {'call p99':>8} "
        f"{'RSS before':>10} {'RSS idle':>8} {'RSS after':>9} {'KB/session':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.failure:
            lines.append(f"{r.era:10} {r.sessions:>8} FAILED: {r.failure[:150]}")
            continue
        lines.append(
            f"{r.era:10} {r.sessions:>8} {r.opened:>6} {r.open_seconds:6.1f} {r.open_errors + r.call_errors:>6} "
            f"{r.call_p50_ms:8.1f} {r.call_p99_ms:8.1f} {r.rss_before_mb:10.0f} {r.rss_idle_mb:8.0f} "
            f"{r.rss_after_calls_mb:9.0f} {r.rss_per_idle_session_kb:10.1f}"
        )
        lines.extend(f"    {error}" for error in r.first_errors)
    return "\n".join(lines)


def goal_verdicts(rows: Sequence[Row], idle: Sequence[IdleRow], side: Sequence[SideRow] = ()) -> list[str]:
    """The issue's goals, for the gateway rows that exist in this run. The added-p50 goal
    says "measured side by side": where the side part ran, its figures decide it."""
    verdicts: list[str] = []

    def verdict(ok: bool, text: str) -> None:
        verdicts.append(f"{'PASS' if ok else 'MISS'} {text}")

    floors = {s.pair: s for s in side if s.peer == "relay" and s.calls}
    decided = set()
    for s in side:
        if s.peer != "gateway" or s.pair not in GOAL_ADDED_P50_MS or s.added_p50_ms is None:
            continue
        goal = GOAL_ADDED_P50_MS[s.pair]
        floor = floors.get(s.pair)
        beside = f"; the bare relay {floor.added_p50_ms:+.2f} ms" if floor and floor.added_p50_ms is not None else ""
        paired = f", paired {s.paired_added_ms:+.2f} ms" if s.paired_added_ms is not None else ""
        verdict(
            s.added_p50_ms <= goal,
            f"{s.pair} c=1 side by side ({s.method}): added p50 {s.added_p50_ms:+.2f} ms{paired} "
            f"(goal <= {goal} ms){beside}",
        )
        decided.add(s.pair)
    for r in rows:
        if r.peer != "gateway" or not r.calls:
            continue
        if r.concurrency == 1 and r.pair in GOAL_ADDED_P50_MS and r.added_p50_ms is not None and r.pair not in decided:
            goal = GOAL_ADDED_P50_MS[r.pair]
            verdict(r.added_p50_ms <= goal, f"{r.pair} c=1: added p50 {r.added_p50_ms:+.2f} ms (goal <= {goal} ms)")
        if r.concurrency == 32 and r.throughput_pct_of_direct is not None:
            verdict(
                r.throughput_pct_of_direct >= GOAL_THROUGHPUT_PCT_C32,
                f"{r.pair} c=32: throughput {r.throughput_pct_of_direct:.0f} % of direct{spread(r)} "
                f"(goal >= {GOAL_THROUGHPUT_PCT_C32:.0f} %){client_bound(r)}{machine_bound(r, rows)}",
            )
        cpu = r.cpu_ms_per_call.get("proxy")
        if cpu is not None and r.concurrency == 1:
            verdict(
                cpu <= GOAL_CPU_MS_PER_CALL,
                f"{r.pair} c=1: gateway CPU {cpu:.2f} ms per call (goal <= {GOAL_CPU_MS_PER_CALL} ms)",
            )
    for i in idle:
        errors = i.open_errors + i.call_errors
        ok = not i.failure and errors == 0 and i.opened == i.sessions
        verdict(ok, f"{i.sessions} sessions {i.era}: {errors} errors, {i.rss_per_idle_session_kb:.0f} KB per session")
    return verdicts


def spread(row: Row) -> str:
    """With ``--rounds``: that the figure is a median, and every round's."""
    if len(row.round_throughput_pct) < 2:
        return ""
    each = "/".join(f"{pct:.0f}" for pct in row.round_throughput_pct)
    return f" (median of {len(row.round_throughput_pct)} rounds: {each})"


def client_bound(row: Row) -> str:
    """Why a throughput row may say more about the bench's client than about the proxy: the
    client sessions all run in the bench's one Python process, which cannot use more than one
    core, and a stdio client costs it far less per call than an HTTP one."""
    client_ms = row.cpu_ms_per_call.get("client")
    if client_ms is None:
        return ""
    cores = client_ms * row.calls_per_s / 1e3
    return f"; the bench's client process used {cores:.2f} of a core ({client_ms:.2f} ms per call)"


def machine_bound(row: Row, rows: Sequence[Row]) -> str:
    """What a throughput ratio is bounded by when every process of the path shares the
    machine's cores: the CPU the whole path spends per call (client, proxy, upstream) against
    the direct path's. For a pair that changes transport, also the same client straight to an
    upstream of its own transport, which costs the client what the gateway path costs it."""

    def total(r: Row) -> float | None:
        parts = [r.cpu_ms_per_call.get(k) for k in ("client", "proxy", "upstream")]
        known = [p for p in parts if p is not None]
        return sum(known) if known else None

    def direct(pair: str) -> Row | None:
        found = [d for d in rows if d.pair == pair and d.peer == "direct" and d.concurrency == row.concurrency]
        return found[0] if found and found[0].calls else None

    text = ""
    base = direct(row.pair)
    mine, theirs = total(row), total(base) if base else None
    if mine is not None and theirs is not None:
        text = f"; the whole path used {mine:.2f} ms of CPU per call against direct's {theirs:.2f}"
    client_side, upstream_side = row.pair.split("-")
    if client_side != upstream_side:
        same = direct(f"{client_side}-{client_side}")
        if same is not None and same.calls_per_s:
            pct = 100 * row.calls_per_s / same.calls_per_s
            kind = {"http": "an HTTP", "stdio": "a stdio"}.get(client_side, client_side)
            text += f"; {pct:.0f} % of the same client straight to {kind} upstream"
    return text


def versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in ("mcp", "mcp-aggregator", "uvicorn", "httpx2", "anyio", "orjson", "msgspec"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    found["fastmcp"] = "4.1.2 (bench/.venv-fastmcp)"
    found["mcp-proxy"] = "0.13.0 (bench/.venv-mcp-proxy)"
    return found


def write_json(
    out: Path,
    options: dict[str, Any],
    rows: Sequence[Row],
    large: Sequence[LargeRow],
    idle: Sequence[IdleRow],
    verdicts: Sequence[str],
    started: float,
    notes: Sequence[str],
    side: Sequence[SideRow] = (),
) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "started_unix": round(started),
        "duration_s": round(time.time() - started, 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": versions(),
        "options": options,
        "setup": {
            "client": "mcp.Client(target, cache=None), one session per HTTP worker, closed-loop sequential calls",
            "echo_http": "MCPServer streamable HTTP, stateless_http=True, json_response=True, uvicorn",
            "direct": "the client talks to the echo upstream over the pair's upstream-side transport",
            "relay": "bench/relay.py: bytes copied through one more process, unread (http-http, stdio-stdio)",
            "side_by_side": "c=1, one session per path, one call per path per round in rotating order",
            "stdio_sessions": "a stdio session is one proxy process; concurrency beyond the cap shares sessions",
            "cpu": "utime+stime from /proc: proxy = every bench descendant but the echo upstream(s) and py-spy",
            "rss": "peak summed RSS of the proxy processes, sampled every 50 ms",
            "gateway": "passthrough, search.embedder none, audit off, serve defaults otherwise",
            "gateway_audit": "the same with audit.enabled true (batched writes to the SQLite registry)",
            "gateway_trace": "the same with OTEL_TRACES_EXPORTER=otlp (http/protobuf) to bench/otlp_sink.py",
        },
        "notes": list(notes),
        "verdicts": list(verdicts),
        "rows": [asdict(row) for row in rows],
        "large_results": [asdict(row) for row in large],
        "idle_sessions": [asdict(row) for row in idle],
        "side_by_side": [asdict(row) for row in side],
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
