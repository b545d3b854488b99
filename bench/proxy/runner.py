"""One run: the main table (pairs x paths x concurrency), large results, held-open sessions."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import anyio

from .idle import ERAS, IdleRow, run_idle
from .large import LargeRow, run_large
from .measure import Budget, Row, find_tool, measure_row, open_sessions
from .options import Options, parse_options
from .paths import (
    Endpoint,
    Pair,
    PathEnv,
    Unavailable,
    Upstream,
    http_echo,
    serve_fields_known,
    start_path,
    unsupported,
)
from .procs import ProcessSet, describe, ignore_existing_children, raise_fd_limit
from .pyspy import profiling
from .report import (
    compare_to_direct,
    format_idle,
    format_large,
    format_main,
    format_side,
    goal_verdicts,
    write_json,
)
from .side import SideRow, run_side

PROFILED = ("gateway", "http-http", 1)


def profile_log(out: Path) -> Path:
    return out.with_suffix(".log")


def sessions_for(peer: str, pair: Pair, concurrency: int, options: Options) -> int:
    """HTTP: one session per worker. stdio: a session is a process, so at most the cap.

    Direct gets as many sessions as the proxies it is compared with, where its transport
    allows: one Python client process carrying 256 HTTP sessions is slower than the same
    process carrying 8, and that must not read as a proxy beating direct."""
    capped = min(concurrency, options.stdio_sessions)
    if peer == "direct":
        return capped if "stdio" in (pair.client, pair.upstream) else concurrency
    return concurrency if pair.client == "http" else capped


async def measure_path(
    endpoint: Endpoint, rows: Sequence[Row], sessions: Sequence[int], options: Options, profile_lines: list[str]
) -> None:
    budget = Budget(options.calls, options.warmup, options.row_seconds)
    mode = ERAS[options.era]
    async with open_sessions(lambda: endpoint.make_client(mode), max(sessions)) as pool:
        if pool.open_errors:
            raise RuntimeError(f"{len(pool.open_errors)} session(s) failed to open: {pool.open_errors[0]}")
        tool = await find_tool(pool.clients[0], "echo")
        for row, count in zip(rows, sessions, strict=True):
            print(f"  {row.pair:11} {row.peer:12} c={row.concurrency:<3} s={count:<3} ...", end="", flush=True)
            profiled = options.profile and (row.peer, row.pair, row.concurrency) == PROFILED
            gateway = ProcessSet.of_bench().proxy
            sampler: contextlib.AbstractContextManager[list[str]] = contextlib.nullcontext([])
            if profiled and gateway:
                out = options.json_path.parent / "profile-gateway-http-http-c1.txt"
                sampler = profiling(gateway[0], out, profile_log(out))
            with sampler as lines:
                await measure_row(pool.clients[:count], tool, row, budget)
            profile_lines.extend(lines)
            cpu = row.cpu_ms_per_call.get("proxy")
            print(
                f" p50 {row.p50_ms:.2f} ms, {row.calls_per_s:.0f} calls/s"
                + (f", proxy {cpu:.2f} ms CPU/call" if cpu is not None else "")
                + (f", {row.errors} ERRORS, first: {row.first_errors[0]}" if row.errors else ""),
                flush=True,
            )


def run_main(options: Options, env: PathEnv, http_upstream: Upstream, profile_lines: list[str]) -> list[Row]:
    """The main table; with ``--rounds`` it is measured that many times (every path in turn
    each round, so a slow minute of the machine hits them alike, starting one path later each
    round, so that no path is always the first or the last) and each cell is its median round:
    on two shared cores one round's ratio moves by tens of percent."""
    ignore_existing_children()
    rounds = []
    for index in range(options.rounds):
        if options.rounds > 1:
            print(f"round {index + 1} of {options.rounds}:", flush=True)
        # The profile is taken once: py-spy slows the row it samples.
        once = options if index == 0 else dataclasses.replace(options, profile=False)
        rounds.append(run_round(once, env, http_upstream, profile_lines, rotate=index))
    return rounds[0] if len(rounds) == 1 else median_rows(rounds)


def median_rows(rounds: Sequence[Sequence[Row]]) -> list[Row]:
    """Each cell's median round: by throughput % of the round's direct row (direct rows by
    calls/s), with every round's ratio kept beside it."""
    merged: list[Row] = []
    for cells in zip(*rounds, strict=True):
        measured = [c for c in cells if c.calls and not c.failure]
        if not measured:
            merged.append(cells[0])
            continue

        def key(row: Row) -> float:
            if row.peer == "direct" or row.throughput_pct_of_direct is None:
                return row.calls_per_s
            return row.throughput_pct_of_direct

        ordered = sorted(measured, key=key)
        middle = dataclasses.replace(ordered[(len(ordered) - 1) // 2])
        middle.round_throughput_pct = [c.throughput_pct_of_direct for c in cells if c.throughput_pct_of_direct]
        merged.append(middle)
    return merged


def run_round(
    options: Options, env: PathEnv, http_upstream: Upstream, profile_lines: list[str], *, rotate: int = 0
) -> list[Row]:
    """One measurement of every path of every pair; each pair's paths are taken starting at
    the ``rotate``-th (the rows come back in the options' order all the same)."""
    results: list[Row] = []
    direct_runs: dict[tuple[str, tuple[int, ...]], list[Row]] = {}
    start = rotate % len(options.peers)
    order = options.peers[start:] + options.peers[:start]
    for pair_text in options.pairs:
        pair = Pair.parse(pair_text)
        upstream = http_upstream if pair.upstream == "http" else Upstream("stdio")
        by_peer: dict[str, list[Row]] = {}
        for peer in order:
            rows = [Row(pair_text, peer, c) for c in options.concurrency]
            reason = unsupported(peer, pair)
            sessions = [sessions_for(peer, pair, c, options) for c in options.concurrency]
            direct_key = (pair.upstream, tuple(sessions))
            if peer == "direct" and direct_key in direct_runs:
                # The same upstream and sessions as another pair's direct: show that one run.
                rows = [
                    dataclasses.replace(done, pair=pair_text, note=f"same run as {done.pair}")
                    for done in direct_runs[direct_key]
                ]
            elif reason is None:
                try:
                    with start_path(peer, pair, upstream, env) as endpoint:
                        anyio.run(measure_path, endpoint, rows, sessions, options, profile_lines)
                except Unavailable as exc:
                    reason = str(exc)
                except Exception as exc:  # one broken path must not hide the others' figures
                    print(f"\n  {pair_text} {peer} FAILED: {describe(exc)}", flush=True)
                    for row in rows:
                        if not row.calls:
                            row.failure = describe(exc)[:300]
                if peer == "direct":
                    direct_runs[direct_key] = rows
            if reason is not None:
                print(f"  {pair_text:11} {peer:12} n/a: {reason}", flush=True)
                for row in rows:
                    row.note = reason
            by_peer[peer] = rows
        for peer in options.peers:
            results.extend(by_peer[peer])
    compare_to_direct(results)
    return results


def main(argv: Sequence[str] | None = None, description: str = "") -> int:
    options = parse_options(argv, description)
    started = time.time()
    fds = raise_fd_limit()
    print(
        f"pairs {','.join(options.pairs)}; concurrency {options.concurrency}; calls/row {options.calls} "
        f"(cap {options.row_seconds:.0f} s); {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, fds {fds}",
        flush=True,
    )
    rows: list[Row] = []
    large: list[LargeRow] = []
    idle: list[IdleRow] = []
    side: list[SideRow] = []
    notes: list[str] = []
    profile_lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp, open(Path(tmp) / "stdio-errors.log", "w") as errlog:
        env = PathEnv(Path(tmp), errlog, serve_fields_known())
        for field in ("fast_path", "max_result_bytes"):
            if field not in env.serve_fields:
                notes.append(f"serve.{field} is not a setting of this checkout")
        with http_echo(Path(tmp)) as http_upstream:
            if "main" in options.parts:
                rows = run_main(options, env, http_upstream, profile_lines)
            if "side" in options.parts:
                print(f"side by side at c=1 ({options.side_method}, one per path per round):", flush=True)
                side = run_side(options, env, http_upstream)
            if "large" in options.parts:
                print("large results:", flush=True)
                large = run_large(options.large_mb, options.large_timeout, http_upstream, env, options.pairs)
            if "idle" in options.parts:
                print("held-open sessions:", flush=True)
                idle = run_idle(options.idle_sessions, http_upstream, env)
    verdicts = goal_verdicts(rows, idle, side)
    sections = [
        (
            "tool calls: ratios vs direct; cpu/call (ms) and peak RSS summed over the proxy processes",
            format_main(rows) if rows else "",
        ),
        (
            f"c=1 side by side: {options.side_method} interleaved one by one; added vs direct",
            format_side(side) if side else "",
        ),
        (f"large results (timeout {options.large_timeout:.0f} s)", format_large(large) if large else ""),
        ("held-open sessions against the gateway (HTTP)", format_idle(idle) if idle else ""),
        ("goals (issue 13)", "\n".join(verdicts)),
        ("notes", "\n".join(notes)),
        ("gateway profile, http-http c=1", "\n".join(profile_lines)),
    ]
    for title, body in sections:
        if body:
            print(f"\n== {title}\n{body}")
    options_json = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()}
    write_json(options.json_path, options_json, rows, large, idle, verdicts, started, notes + profile_lines, side)
    print(f"\nwrote {options.json_path}")
    failed = any(r.failure for r in rows) or any(s.failure for s in side) or any(i.failure for i in idle)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
