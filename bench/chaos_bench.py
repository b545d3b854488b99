"""Chaos benchmark: how the gateway notices a dead, stopped or hung upstream under load, how
fast it recovers, what its status API says meanwhile, and what abandoned sessions cost.

The gateway runs in passthrough with ``mcp-server-time`` over stdio and an SDK server over
streamable HTTP; SDK clients of both eras (2026-07-28 and 2025-11-25) call a tool of each all
the time, and the admin API's ``GET /servers`` is sampled every 50 ms. Faults, one after the
other: kill -9 of the stdio upstream; kill -9 of the HTTP upstream, started again on its port
after ``--outage`` seconds; SIGSTOP of the HTTP upstream for ``--outage`` seconds; ``--sessions``
handshake-era sessions opened and abandoned.

Usage::

    python bench/chaos_bench.py [--faults stdio_kill,http_restart,http_hang,abandoned_sessions]
                                [--outage 3] [--rate 20] [--sessions 200] [--idle 20]
                                [--json out.json] [--src path/to/src]

``--src`` runs another checkout's gateway (to compare before and after a change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos.faults import FAULTS, Timing
from bench.chaos.harness import ERAS, TOOLS, load, poll_failures, poll_status, wait_connected, world
from bench.chaos.observe import fault_row

REPO = Path(__file__).resolve().parent.parent
GOAL_RECOVERY_S = 2.0
GOAL_LEAVES_CONNECTED_S = 2.0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated, from: " + ", ".join(FAULTS))
    parser.add_argument("--outage", type=float, default=3.0, help="seconds the HTTP upstream stays stopped / hung")
    parser.add_argument("--rate", type=float, default=20.0, help="calls per second of each client (4 clients)")
    parser.add_argument("--sessions", type=int, default=200, help="abandoned handshake-era sessions")
    parser.add_argument("--idle", type=float, default=20.0, help="serve.session_idle_secs of the bench's gateway")
    parser.add_argument("--watch", type=float, default=12.0, help="seconds to wait for recovery at most")
    parser.add_argument("--settle", type=float, default=1.5, help="seconds of quiet load before and after each fault")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="the gateway's source tree")
    parser.add_argument("--keep", type=Path, help="work (and keep the gateway's log) in this directory")
    args = parser.parse_args(argv)
    unknown = [f for f in args.faults.split(",") if f not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {list(FAULTS)}")
    return args


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    timing = Timing(args.outage, args.watch, args.settle, args.sessions, args.idle)
    rows: list[dict[str, Any]] = []
    with world(workdir, args.src.resolve(), idle_secs=args.idle) as here:
        await wait_connected(here)
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(poll_status, here, 0.05, stop)
            tg.start_soon(poll_failures, here, 0.25, stop)
            for upstream in TOOLS:
                for era in ERAS:
                    tg.start_soon(load, here, upstream, era, 1 / args.rate, stop)
            try:
                for name in args.faults.split(","):
                    window = await FAULTS[name](here, timing)
                    rows.append(fault_row(window, here.record))
            finally:
                stop.set()
        errors = here.error_lines()
        hangups = here.log_count("hung up mid-request")
        total = len(here.record.calls)
    return {
        "command": " ".join(["python", "bench/chaos_bench.py", *sys.argv[1:]]),
        "machine": machine(),
        "source": str(args.src),
        "calls": total,
        "faults": rows,
        "gateway_error_log_lines": len(errors),
        "gateway_error_log_sample": errors[:5],
        "client_hangups_logged_at_info": hangups,
        "goals": goals(rows),
    }


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"
    )


def goals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if "sessions" in row["fault"]:
            continue
        if row["fault"].startswith(("stdio", "http stop")):
            out.append(_goal(row, "recovery_s", GOAL_RECOVERY_S, "recovery"))
        out.append(_goal(row, "status_left_connected_s", GOAL_LEAVES_CONNECTED_S, "status leaves CONNECTED"))
    out.append(
        {
            "goal": "0 failed calls to other upstreams",
            "value": sum(r["failed_other_upstreams"] for r in rows),
            "met": all(r["failed_other_upstreams"] == 0 for r in rows),
        }
    )
    return out


def _goal(row: dict[str, Any], key: str, limit: float, what: str) -> dict[str, Any]:
    value = row[key]
    return {
        "goal": f"{row['fault']}: {what} <= {limit:g} s",
        "value": value,
        "met": value is not None and value <= limit,
    }


def table(result: dict[str, Any]) -> str:
    head = (
        "| fault | upstream | calls | failed (07-28 / 11-25) | failed, other upstream | first error s "
        "| left CONNECTED s | recovered s | RSS MB before → after |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    )
    lines = [head]
    for r in result["faults"]:
        failed = " / ".join(str(r["failed"].get(era, 0)) for era in ERAS)
        lines.append(
            f"| {r['fault']} | {r['upstream']} | {r['calls']} | {failed} | {r['failed_other_upstreams']} "
            f"| {_cell(r['first_error_s'])} | {_cell(r['status_left_connected_s'])} | {_cell(r['recovery_s'])} "
            f"| {r['rss_before_mb']} → {r['rss_after_mb']} |"
        )
    lines.append("")
    for r in result["faults"]:
        if r["timeline"] and "sessions" not in r["fault"]:
            peak = r["max_consecutive_failures"]
            lines.append(f"- {r['fault']} status: {' '.join(r['timeline'])}; consecutive_failures peaked at {peak}")
        if r["note"]:
            lines.append(f"- {r['fault']}: {r['note']}")
    lines.append(
        f"- gateway log: {result['gateway_error_log_lines']} ERROR lines, "
        f"{result['client_hangups_logged_at_info']} client hang-ups at INFO; {result['calls']} calls in all"
    )
    lines.append("")
    for goal in result["goals"]:
        lines.append(f"- {'met' if goal['met'] else 'MISSED'}: {goal['goal']} (got {goal['value']})")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = anyio.run(run, args, args.keep.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="chaos-bench-") as tmp:
            result = anyio.run(run, args, Path(tmp))
    print(f"{result['command']}\n{result['machine']}\n")
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
