"""Real gateway replicas as subprocesses on one PostgreSQL schema, and helpers to drive them.

Every process starts in its own session (process group) and is stopped by group, so a
replica's own children (stdio upstreams) end with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import asyncpg
import httpx
import mcp_types as types
import pytest
import yaml
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.conftest import REPO
from tests.ports import free_port

PG_URL = os.environ.get("MCP_AGGREGATOR_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
PG_DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
ADMIN_TOKEN = "replica-test-token"
AUTH = {"authorization": f"Bearer {ADMIN_TOKEN}"}
SERVERS = "/api/v1/aggregator/servers"

T = TypeVar("T")


async def fresh_schema() -> str:
    """A schema name of our own; skips (or fails in CI) when PostgreSQL is unreachable."""
    try:
        conn = await asyncpg.connect(PG_DSN, timeout=5)
    except (OSError, asyncpg.PostgresError) as exc:
        reason = f"PostgreSQL unreachable at {PG_URL}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    await conn.close()
    return f"mcp_r_{uuid.uuid4().hex[:12]}"


async def drop_schema(schema: str) -> None:
    conn = await asyncpg.connect(PG_DSN, timeout=5)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def fixture_upstream(name: str) -> dict[str, Any]:
    """The stdio fixture upstream as the admin API registers it."""
    return {
        "name": name,
        "transport_type": "STDIO",
        "connection_config": {
            "command": sys.executable,
            "args": ["-m", "tests.upstream.fixture_server", "stdio", "--name", name],
            "cwd": str(REPO),
        },
        "auto_connect": True,
    }


def config_upstream(name: str) -> dict[str, Any]:
    """The stdio fixture upstream as a config file lists it."""
    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "tests.upstream.fixture_server", "stdio", "--name", name],
        "cwd": str(REPO),
    }


def replica_config(
    directory: Path,
    schema: str,
    port: int,
    *,
    reconcile_interval_secs: float = 30.0,
    servers: Sequence[dict[str, Any]] = (),
    **serve: Any,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "servers": list(servers),
        "registry": {
            "database_url": PG_URL,
            "pg_schema": schema,
            "reconcile_interval_secs": reconcile_interval_secs,
        },
        "serve": {
            "host": "127.0.0.1",
            "port": port,
            "admin_token": ADMIN_TOKEN,
            "exposure": "passthrough",
            "data_dir": str(directory / "data"),
            **serve,
        },
        "search": {"embedder": "none", "cache_path": str(directory / "embeddings.db")},
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")])
    env["HF_HUB_OFFLINE"] = "1"
    return env


@dataclass
class Spawned:
    """A subprocess in its own process group, stopped (group-wide) by ``stop``."""

    argv: Sequence[str]
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=child_env(),
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    async def stop(self, sig: signal.Signals = signal.SIGTERM, grace: float = 20.0) -> int | None:
        """Signal the whole group, wait up to ``grace``, then SIGKILL it; returns the exit code."""
        process = self.process
        if process is None:
            return None
        self.process = None
        _signal_group(process.pid, sig)
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(partial(process.wait, grace))
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                await anyio.to_thread.run_sync(process.wait)
        return process.returncode

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@dataclass
class Replica:
    name: str
    config: Path
    port: int
    proc: Spawned

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, *, within: float = 60.0) -> None:
        self.proc.start()
        await wait_healthy(self.base, within=within, proc=self.proc)

    async def kill(self) -> None:
        await self.proc.stop(signal.SIGKILL)


def make_replica(directory: Path, schema: str, name: str, **config: Any) -> Replica:
    port = free_port()
    path = replica_config(directory / name, schema, port, **config)
    argv = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(path)]
    return Replica(name, path, port, Spawned(argv, directory / f"{name}.log"))


async def wait_healthy(base: str, *, within: float, proc: Spawned | None = None) -> None:
    async with httpx.AsyncClient(timeout=2) as http:
        with anyio.move_on_after(within):
            while True:
                if proc is not None and not proc.running():
                    raise RuntimeError(f"{proc.argv} exited early:\n{proc.tail()}")
                try:
                    if (await http.get(f"{base}/healthz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.05)
    log = f", its log ends:\n{proc.tail()}" if proc is not None else ""
    raise TimeoutError(f"{base} not healthy within {within:.0f}s{log}")


async def poll(check: Callable[[], Awaitable[T | None]], *, within: float, what: str) -> T:
    """Re-run ``check`` until it returns something, failing with ``what`` after ``within`` seconds."""
    last: BaseException | None = None
    try:
        with anyio.fail_after(within):
            while True:
                result = None
                try:
                    result = await check()
                except* (httpx.TransportError, OSError, MCPError) as group:
                    # A replica still starting refuses connections; its upstream may not be up yet.
                    # (Raised inside ``async with Client`` these arrive grouped.)
                    last = group
                if result is not None:
                    return result
                await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out after {within}s waiting for {what} (last error: {last})") from None


async def tool_names(base: str) -> set[str]:
    async with Client(f"{base}/mcp", mode="auto", cache=None) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def call_text(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@asynccontextmanager
async def admin(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, headers=AUTH, timeout=60) as http:
        yield http


@asynccontextmanager
async def replicas(directory: Path, schema: str, names: Sequence[str], **config: Any) -> AsyncIterator[list[Replica]]:
    """Start replicas one after the other (concurrent starts race the migrations' lock for nothing)."""
    started = [make_replica(directory, schema, name, **config) for name in names]
    try:
        for replica in started:
            await replica.start()
        yield started
    finally:
        with anyio.CancelScope(shield=True):
            for replica in started:
                await replica.proc.stop()


LEGACY_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def raw_legacy_session(http: httpx.AsyncClient, url: str) -> str:
    """Open a 2025-11-25 session with plain HTTP; returns its ``Mcp-Session-Id``."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=LEGACY_HEADERS
    )
    response.raise_for_status()
    session = response.headers["mcp-session-id"]
    headers = {**LEGACY_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return session


async def raw_legacy_call(
    http: httpx.AsyncClient, url: str, session: str, name: str, arguments: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """One ``tools/call`` on a raw session: the HTTP status and the JSON-RPC reply, if any."""
    headers = {**LEGACY_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = await http.post(url, json=body, headers=headers)
    if response.status_code != 200:
        return response.status_code, None
    if response.headers.get("content-type", "").startswith("application/json"):
        return 200, response.json()
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == 7:
                return 200, message
    return 200, None


def reply_text(reply: dict[str, Any] | None) -> str:
    assert reply is not None and "result" in reply, reply
    return str(reply["result"]["content"][0]["text"])
