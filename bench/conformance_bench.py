"""How much of the official MCP conformance suite passes through the gateway (issue 11).

Usage::

    .venv/bin/python bench/conformance_bench.py [--upstream tests.upstream.MODULE] [--json PATH]

Runs every server scenario of ``@modelcontextprotocol/conformance`` (Node 22 from npm, see
upstreams/package.json) three times: against the conformance fixture upstream alone
(``tests/upstream/conformance_server.py``), then through ``mcp-aggregator serve --exposure
passthrough`` with the fixture as its only upstream, once over streamable HTTP and once over
stdio. Prints the counts and writes per-scenario detail to ``bench/results/conformance.json``.
``--upstream tests.upstream.handshake_style_conformance_server`` measures an upstream whose
tools ask back through their session in every era, as most servers in the wild do.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio

# The harness lives with the tests; this script runs from a checkout, not an installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.serve import conformance_runner as runner
from tests.serve.conformance_runner import ScenarioResult

RESULTS_PATH = Path(__file__).parent / "results" / "conformance.json"
# The suite's "active" set is "all" minus these two pending scenarios; the issue counts the active set.
PENDING = frozenset({"json-schema-2020-12", "server-sse-polling"})

Results = dict[str, ScenarioResult]


async def fixture_alone(work: Path, module: str) -> Results:
    async with runner.fixture_http_server(module) as url:
        return await runner.run_suite(url, work / "direct")


async def via_http_upstream(work: Path, module: str) -> Results:
    async with (
        runner.fixture_http_server(module) as upstream,
        runner.gateway_process(runner.fixture_http_config(upstream), work / "gateway-http") as url,
    ):
        return await runner.run_suite(url, work / "via-http")


async def via_stdio_upstream(work: Path, module: str) -> Results:
    async with runner.gateway_process(runner.fixture_stdio_config(module), work / "gateway-stdio") as url:
        return await runner.run_suite(url, work / "via-stdio")


RUNS: dict[str, tuple[str, Callable[[Path, str], Awaitable[Results]]]] = {
    "direct": ("the fixture alone", fixture_alone),
    "via_http": ("through the gateway, upstream over streamable HTTP", via_http_upstream),
    "via_stdio": ("through the gateway, upstream over stdio", via_stdio_upstream),
}


def _summary(results: Results) -> dict[str, int]:
    active = {name: result for name, result in results.items() if name not in PENDING}
    return {
        "passed": len(runner.passed(results)),
        "of": len(results),
        "active_passed": len(runner.passed(active)),
        "active_of": len(active),
        "with_warnings": sum(1 for result in results.values() if result.warnings),
    }


async def main(module: str, results_path: Path) -> None:
    runner.require_suite()
    measured: dict[str, Results] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="conformance-bench-") as tmp:
        for key, (_label, run) in RUNS.items():
            started = time.perf_counter()
            measured[key] = await run(Path(tmp), module)
            seconds[key] = time.perf_counter() - started

    print("| | scenarios passed (all 32) | active suite (30) | run time |")
    print("| --- | --- | --- | --- |")
    for key, (label, _run) in RUNS.items():
        counts = _summary(measured[key])
        print(
            f"| {label} | {counts['passed']} / {counts['of']} | {counts['active_passed']} / {counts['active_of']} "
            f"| {seconds[key]:.1f} s |"
        )
    baseline = measured["direct"]
    for key in ("via_http", "via_stdio"):
        lost = runner.regressions(baseline, measured[key])
        if lost:
            print(f"\nFailing {RUNS[key][0]}:\n{lost}")

    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "suite": "@modelcontextprotocol/conformance 0.1.16, --suite all",
        "upstream": module,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "runs": {
            key: {
                "label": RUNS[key][0],
                "seconds": round(seconds[key], 2),
                **_summary(results),
                "scenarios": {
                    name: {"passed": r.passed, "failures": list(r.failures), "warnings": list(r.warnings)}
                    for name, r in sorted(results.items())
                },
            }
            for key, results in measured.items()
        },
    }
    results = anyio.Path(results_path)
    await results.parent.mkdir(parents=True, exist_ok=True)
    await results.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nPer-scenario detail: {results_path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The official conformance suite, direct and through the gateway.")
    parser.add_argument("--upstream", default=runner.FIXTURE_MODULE, help="the upstream's module under tests.upstream")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where the per-scenario detail goes")
    args = parser.parse_args()
    anyio.run(functools.partial(main, args.upstream, args.json))
