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

Then the suite's newer release (0.2.0-alpha.12, ``--requirements 2026-07-28``: the scenarios
that revision requires) against the upstream alone and through the gateway over streamable
HTTP (passthrough, original tool names). ``--everything DIR`` makes that upstream the MCP
Python SDK's conformance everything-server (``DIR`` holds its ``mcp_everything_server``
package: ``examples/servers/everything-server`` of the SDK's repository); without it, the
fixture. ``--requirements-only`` skips the older suite.
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
from contextlib import AbstractAsyncContextManager
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


async def requirements_direct(work: Path, module: str, everything: Path | None) -> Results:
    async with _upstream_url(module, everything) as url:
        return await _requirements(url, work / "requirements-direct")


async def requirements_via_http(work: Path, module: str, everything: Path | None) -> Results:
    async with (
        _upstream_url(module, everything) as upstream,
        runner.gateway_process(runner.fixture_http_config(upstream), work / "requirements-gateway") as url,
    ):
        return await _requirements(url, work / "requirements-via-http")


def _upstream_url(module: str, everything: Path | None) -> AbstractAsyncContextManager[str]:
    return runner.fixture_http_server(module) if everything is None else runner.everything_http_server(everything)


async def _requirements(url: str, output: Path) -> Results:
    return await runner.run_suite(url, output, requirements=runner.REQUIREMENTS, suite_path=runner.SUITE_2026)


REQUIREMENT_RUNS: dict[str, tuple[str, Callable[[Path, str, Path | None], Awaitable[Results]]]] = {
    "requirements_direct": ("2026-07-28 requirements, the upstream alone", requirements_direct),
    "requirements_via_http": ("2026-07-28 requirements, through the gateway (HTTP)", requirements_via_http),
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


async def main(module: str, results_path: Path, everything: Path | None, requirements_only: bool) -> None:
    runner.require_suite(runner.SUITE_2026)
    measured: dict[str, Results] = {}
    seconds: dict[str, float] = {}
    labels = {key: label for key, (label, _run) in (*RUNS.items(), *REQUIREMENT_RUNS.items())}
    with tempfile.TemporaryDirectory(prefix="conformance-bench-") as tmp:
        if not requirements_only:
            runner.require_suite()
            for key, (_label, run) in RUNS.items():
                started = time.perf_counter()
                measured[key] = await run(Path(tmp), module)
                seconds[key] = time.perf_counter() - started
        for key, (_label, requirement_run) in REQUIREMENT_RUNS.items():
            started = time.perf_counter()
            measured[key] = await requirement_run(Path(tmp), module, everything)
            seconds[key] = time.perf_counter() - started

    print("| | scenarios passed | active scenarios | run time |")
    print("| --- | --- | --- | --- |")
    for key, run_results in measured.items():
        counts = _summary(run_results)
        print(
            f"| {labels[key]} | {counts['passed']} / {counts['of']} "
            f"| {counts['active_passed']} / {counts['active_of']} | {seconds[key]:.1f} s |"
        )
    for baseline, key in (
        ("direct", "via_http"),
        ("direct", "via_stdio"),
        ("requirements_direct", "requirements_via_http"),
    ):
        if key in measured:
            lost = runner.regressions(measured[baseline], measured[key])
            if lost:
                print(f"\nFailing {labels[key]}:\n{lost}")

    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "suite": ("@modelcontextprotocol/conformance 0.1.16 (--suite all), 0.2.0-alpha.12 (--requirements 2026-07-28)"),
        "upstream": module if everything is None else "the MCP Python SDK's everything-server",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "runs": {
            key: {
                "label": labels[key],
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
    written = anyio.Path(results_path)
    await written.parent.mkdir(parents=True, exist_ok=True)
    await written.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nPer-scenario detail: {results_path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The official conformance suite, direct and through the gateway.")
    parser.add_argument("--upstream", default=runner.FIXTURE_MODULE, help="the upstream's module under tests.upstream")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where the per-scenario detail goes")
    parser.add_argument(
        "--everything",
        type=Path,
        help="a directory holding the SDK's mcp_everything_server package (2026 requirements)",
    )
    parser.add_argument("--requirements-only", action="store_true", help="run only the 2026-07-28 requirements")
    args = parser.parse_args()
    anyio.run(functools.partial(main, args.upstream, args.json, args.everything, args.requirements_only))
