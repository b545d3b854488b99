"""The chaos bench's world: a gateway process in passthrough with a stdio upstream
(``mcp-server-time``) and an SDK server over streamable HTTP, SDK clients of both eras calling
both all the time, and a poller reading the status the admin API reports."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
from bench.chaos.observe import Call, Record, StatusSample, now
from bench.proxy.procs import BenchError, child_env, descendants, free_port, log_tail, managed_process, wait_for_http
from mcp import Client
from mcp.shared.exceptions import MCPError

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
PYTHON = sys.executable
ADMIN_TOKEN = "chaos-bench-admin-token"
API = "/api/v1/aggregator"
ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}
TOOLS = {"clock": ("clock__get_current_time", {"timezone": "UTC"}), "web": ("web__echo", {"text": "chaos"})}


@dataclass
class World:
    """Everything a fault acts on."""

    workdir: Path
    gateway: subprocess.Popen[bytes]
    gateway_log: Path
    mcp_url: str
    web_port: int
    web: subprocess.Popen[bytes] | None
    src: Path
    record: Record
    clock_command: str

    def clock_pid(self) -> int:
        for pid in descendants(self.gateway.pid):
            with contextlib.suppress(OSError):
                if "mcp-server-time" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    return pid
        raise BenchError("mcp-server-time is not running under the gateway")

    def start_web(self) -> None:
        """The HTTP upstream, on its port (again); returns once it listens."""
        argv = [PYTHON, "-m", "tests.upstream.fixture_server", "http", "--name", "web", "--port", str(self.web_port)]
        log = (self.workdir / "web.log").open("ab")
        proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=log, env=child_env())
        log.close()
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("PORT "):
            proc.kill()
            proc.wait()
            raise BenchError(f"the HTTP upstream did not start: {line!r}")
        self.web = proc

    def stop_web(self) -> None:
        """kill -9 of the HTTP upstream (it stops answering and its port closes)."""
        if self.web is not None and self.web.poll() is None:
            self.web.send_signal(signal.SIGKILL)
            self.web.wait()
        if self.web is not None and self.web.stdout is not None:
            self.web.stdout.close()
        self.web = None

    def error_lines(self) -> list[str]:
        text = self.gateway_log.read_text(errors="replace").splitlines()
        return [line for line in text if " ERROR " in f" {line} " or line.startswith("ERROR")]

    def log_count(self, needle: str) -> int:
        return self.gateway_log.read_text(errors="replace").count(needle)


def serve_fields(src: Path) -> frozenset[str]:
    code = "from mcp_aggregator.settings.serve_settings import ServeSettings as S; print(*S.model_fields)"
    env = {**child_env(), "PYTHONPATH": str(src)}
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if done.returncode != 0:
        raise BenchError(f"cannot import the gateway's settings:\n{done.stderr[-1500:]}")
    return frozenset(done.stdout.split())


def clock_command() -> str:
    return shutil.which("mcp-server-time") or str(Path(PYTHON).parent / "mcp-server-time")


def gateway_config(workdir: Path, web_port: int, src: Path, *, idle_secs: float) -> Path:
    clock = clock_command()
    servers: list[dict[str, Any]] = [
        {"name": "clock", "transport": "stdio", "command": clock},
        {
            "name": "web",
            "transport": "http",
            "base_url": f"http://127.0.0.1:{web_port}/mcp",
            "tool_timeout_secs": 1.5,
            "connect_timeout_secs": 3,
        },
    ]
    serve: dict[str, Any] = {
        "exposure": "passthrough",
        "admin_token": ADMIN_TOKEN,
        "data_dir": str(workdir / "gateway-data"),
        "drain_timeout_secs": 1,
    }
    if "session_idle_secs" in serve_fields(src):
        serve["session_idle_secs"] = idle_secs
    config = {
        "servers": servers,
        "serve": serve,
        "search": {"embedder": "none"},
        "registry": {"database_url": f"sqlite+aiosqlite:///{workdir / 'registry.db'}"},
    }
    path = workdir / "gateway.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextlib.contextmanager
def world(workdir: Path, src: Path, *, idle_secs: float) -> Iterator[World]:
    """The gateway and its upstreams, running until the block ends (every process ended then)."""
    web_port, port = free_port(), free_port()
    config = gateway_config(workdir, web_port, src, idle_secs=idle_secs)
    env = {**child_env(), "PYTHONPATH": str(src)}
    log = workdir / "gateway.log"
    here = World(workdir, None, log, f"http://127.0.0.1:{port}/mcp", web_port, None, src, Record(), clock_command())  # type: ignore[arg-type]
    here.start_web()
    try:
        argv = [PYTHON, "-m", "mcp_aggregator", "serve", "--config", str(config), "--transport", "http"]
        argv += ["--host", "127.0.0.1", "--port", str(port)]
        with managed_process(argv, log, env) as proc:
            here.gateway = proc
            wait_for_http(f"http://127.0.0.1:{port}/healthz", proc, log, deadline_s=60)
            yield here
    finally:
        here.stop_web()


async def wait_connected(here: World, deadline_s: float = 60.0) -> None:
    """Until the admin API says every server is CONNECTED."""
    with anyio.fail_after(deadline_s):
        async with admin_client(here) as http:
            while True:
                servers = (await http.get(f"{API}/servers")).json()
                if servers and all(s["status"] == "CONNECTED" for s in servers):
                    return
                await anyio.sleep(0.2)


def admin_client(here: World) -> httpx.AsyncClient:
    base = here.mcp_url.removesuffix("/mcp")
    return httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)


async def poll_status(here: World, every_s: float, stop: anyio.Event) -> None:
    """Sample the live statuses every ``every_s`` into the record: ``/healthz`` says what
    ``GET /servers`` says (both read the supervisors), without waiting on the registry's
    write-behind, so a sample is taken within milliseconds of its time stamp."""
    async with admin_client(here) as http:
        while not stop.is_set():
            with contextlib.suppress(httpx.HTTPError, ValueError):
                servers = (await http.get("/healthz")).json()["servers"]
                here.record.samples.append(StatusSample(now(), dict(servers)))
            await anyio.sleep(every_s)


async def poll_failures(here: World, every_s: float, stop: anyio.Event) -> None:
    """Sample ``consecutive_failures`` from ``GET /servers`` every ``every_s`` into the record."""
    async with admin_client(here) as http:
        while not stop.is_set():
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                servers = (await http.get(f"{API}/servers")).json()
                counts = {s["name"]: int(s.get("consecutive_failures") or 0) for s in servers}
                here.record.failures.append(StatusSample(now(), counts))
            await anyio.sleep(every_s)


async def load(here: World, upstream: str, era: str, interval_s: float, stop: anyio.Event) -> None:
    """One SDK client of ``era`` calling ``upstream``'s tool every ``interval_s`` until ``stop``.

    A call that fails (an error result or a JSON-RPC error) is recorded with its text; a
    client whose session broke is replaced.
    """
    name, arguments = TOOLS[upstream]
    while not stop.is_set():
        try:
            async with Client(here.mcp_url, mode=ERAS[era], cache=None) as client:  # type: ignore[arg-type]
                while not stop.is_set():
                    started = now()
                    try:
                        with anyio.fail_after(10):
                            result = await client.call_tool(name, arguments)
                        ok, error = not result.is_error, "" if not result.is_error else _text(result)
                    except MCPError as exc:
                        ok, error = False, str(exc)
                    except TimeoutError:
                        ok, error = False, "no answer within 10 s"
                    here.record.calls.append(Call(upstream, era, started, now(), ok, error[:160]))
                    await anyio.sleep(interval_s)
        except Exception as exc:  # the bench's own guard: a broken client session is replaced
            here.record.calls.append(Call(upstream, era, now(), now(), False, f"client session broke: {exc}"[:160]))
            await anyio.sleep(0.2)


def _text(result: Any) -> str:
    content = getattr(result, "content", None) or []
    return str(getattr(content[0], "text", "")) if content else ""


def gateway_log_tail(here: World) -> str:
    return log_tail(here.gateway_log, 20)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
