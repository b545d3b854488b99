"""How fast the command line answers: ``--help`` and ``servers list`` beside ``python -c pass``.

Run: ``.venv/bin/python bench/cli_bench.py [--runs 10] [--starts 3] [--baseline OTHER/src]
[--instructions] [--json bench/results/cli.json]``.

Starts a real gateway (``python -m mcp_aggregator serve --port 0 --json``, no upstream
servers, a fresh data dir) and times, as a user's shell would, whole processes from spawn
to exit: ``python -c pass`` (the interpreter's own start, the floor), ``mcp-aggregator
--help``, and ``mcp-aggregator servers list`` against that gateway (``--gateway`` and
``--token``: the request the command exists for). Each runs ``--runs`` times; the table
gives the wall time's minimum and median and the median CPU time (user + system) of the
process: on a shared machine the minimum is the least disturbed run, and the CPU time does
not grow with other people's load. Then ``--starts`` times it measures the gateway's own
start, from spawn to the line it prints once it listens (wall, and the CPU the gateway used
until then). With ``--instructions`` each command also runs once under valgrind's
callgrind, which counts the instructions it executes: a figure no load changes. With
``--baseline`` the same runs are made first against that ``src`` (e.g. an older checkout,
``git archive main src | tar -x -C /tmp/base``), then against this one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TOKEN = "cli-bench-admin-token-0123456789abcdef"
START_LIMIT_SECS = 60.0


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run; the CPU time does not grow when others load the machine."""
    cpu0, t0 = _cpu_of_children(), time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed, cpu = time.perf_counter() - t0, _cpu_of_children() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, cpu


def _instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions one run executes (callgrind's total): the figure other people's load does
    not move at all, at the price of running some fifty times slower."""
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    done = subprocess.run([*valgrind, *argv], env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1))


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) ``pid`` has used so far, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _config(folder: Path) -> Path:
    config = folder / "gateway.yaml"
    config.write_text(
        json.dumps({"serve": {"admin_token": TOKEN, "data_dir": str(folder / "data")}, "servers": []}),
        encoding="utf-8",
    )
    return config


@contextlib.contextmanager
def _gateway(src: Path, config: Path) -> Iterator[tuple[str, float, float]]:
    """A running gateway: its REST base address, and the wall and CPU seconds it took to listen."""
    argv = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--port", "0", "--json"]
    t0 = time.perf_counter()
    # Its log goes to a file, not a pipe nobody reads: a gateway that fails says why.
    with (config.parent / "gateway.log").open("w+", encoding="utf-8") as log:
        proc = subprocess.Popen(argv, env=_env(src), stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            started = time.perf_counter() - t0
            if not line:
                code = proc.wait()
                log.seek(0)
                raise SystemExit(f"the gateway of {src} exited ({code}) before listening:\n{log.read()[-3000:]}")
            yield json.loads(line)["mcp_url"].removesuffix("/mcp"), started, _cpu_of(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=START_LIMIT_SECS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _stats(samples: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
    stats = {
        "min_s": round(min(samples), 4),
        "median_s": round(statistics.median(samples), 4),
        "max_s": round(max(samples), 4),
        "runs": len(samples),
    }
    if cpu is not None:
        stats["cpu_median_s"] = round(statistics.median(cpu), 4)
    return stats


def measure(src: Path, runs: int, starts: int, *, instructions: bool = False) -> dict[str, dict[str, Any]]:
    env = _env(src)
    cli = [sys.executable, "-m", "mcp_aggregator"]
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        config = _config(Path(tmp))
        start_times: list[float] = []
        start_cpu: list[float] = []
        for _ in range(starts):
            with _gateway(src, config) as (_, started, used):
                start_times.append(started)
                start_cpu.append(used)
        with _gateway(src, config) as (base, _, _):
            commands = {
                "python -c pass": [sys.executable, "-c", "pass"],
                "mcp-aggregator --help": [*cli, "--help"],
                "mcp-aggregator servers list": [*cli, "servers", "list", "--gateway", base, "--token", TOKEN],
            }
            times: dict[str, list[float]] = {name: [] for name in commands}
            cpu: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(runs):
                # Interleaved, so that a burst of load elsewhere falls on every command alike.
                for name, argv in commands.items():
                    wall, used = _timed(argv, env)
                    times[name].append(wall)
                    cpu[name].append(used)
            counted = {name: _instructions(argv, env) for name, argv in commands.items()} if instructions else {}
    results = {name: _stats(samples, cpu[name]) for name, samples in times.items()}
    for name, count in counted.items():
        results[name]["instructions"] = count
    results["serve (spawn to listening)"] = _stats(start_times, start_cpu)
    return results


def print_table(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    labels = list(results)
    counted = any("instructions" in row for rows in results.values() for row in rows.values())
    what = "wall min / median, CPU median (s)" + (", instructions (G)" if counted else "")
    header = ["command", *(f"{label}: {what}" for label in labels)]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for command in results[labels[0]]:
        cells = []
        for label in labels:
            row = results[label][command]
            cpu = f", {row['cpu_median_s']:.3f}" if "cpu_median_s" in row else ""
            count = f", {row['instructions'] / 1e9:.3f}" if "instructions" in row else ""
            cells.append(f"{row['min_s']:.3f} / {row['median_s']:.3f}{cpu}{count}")
        print(f"| {command} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs of each command")
    parser.add_argument("--starts", type=int, default=3, help="starts of the gateway")
    parser.add_argument("--baseline", type=Path, help="another checkout's src, measured first")
    parser.add_argument(
        "--instructions", action="store_true", help="also count each command's instructions once (valgrind)"
    )
    parser.add_argument("--json", type=Path, default=HERE / "results" / "cli.json")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "mcp_aggregator" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a src folder holding mcp_aggregator")
    results: dict[str, dict[str, dict[str, Any]]] = {}
    if args.baseline is not None:
        results["baseline"] = measure(args.baseline.resolve(), args.runs, args.starts, instructions=args.instructions)
    results["this checkout"] = measure(SRC, args.runs, args.starts, instructions=args.instructions)
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
