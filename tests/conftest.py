"""Shared fixtures: real upstream servers (in-process, stdio, HTTP, SSE) and a running gateway."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import ServerConfig, Settings

REPO = Path(__file__).resolve().parent.parent
NODE_BIN = REPO / "upstreams" / "node_modules" / ".bin"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _run_private_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The int8 variant of the embedding model is derived (in about 2 s) into this run's
    own cache, not the user's ~/.cache; gateways the tests start inherit it."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


def stdio_fixture(name: str = "alpha", **extra: Any) -> ServerConfig:
    """Our own fixture upstream as a stdio subprocess."""
    return ServerConfig(
        name=name,
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.fixture_server", "stdio", "--name", name),
        cwd=str(REPO),
        **extra,
    )


def npm_server(name: str, binary: str, *args: str, env: dict[str, str] | None = None) -> ServerConfig:
    path = NODE_BIN / binary
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing; run ./scripts/bootstrap.sh")
        pytest.skip(f"{path} is missing; run ./scripts/bootstrap.sh")
    return ServerConfig(
        name=name, transport="stdio", command=str(path), args=args, env=env or {}  # type: ignore[arg-type]
    )


def pypi_server(name: str, binary: str, *args: str) -> ServerConfig:
    path = Path(sys.executable).parent / binary
    found = str(path) if path.exists() else shutil.which(binary)
    if found is None:
        pytest.fail(f"{binary} is not installed; run ./scripts/bootstrap.sh")
    return ServerConfig(name=name, transport="stdio", command=found, args=args)  # type: ignore[arg-type]


@dataclass
class HttpUpstream:
    process: subprocess.Popen[str]
    port: int

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_http_upstream(transport: str = "http", name: str = "web") -> HttpUpstream:
    """Start the fixture server over HTTP or SSE; it is listening once it printed its port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.upstream.fixture_server", transport, "--name", name],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        process.wait()
        raise RuntimeError(f"fixture server did not start: {line!r}")
    return HttpUpstream(process, int(line.split()[1]))


@pytest.fixture
def http_upstream() -> Iterator[HttpUpstream]:
    upstream = start_http_upstream("http")
    try:
        yield upstream
    finally:
        upstream.stop()


@pytest.fixture
def sse_upstream() -> Iterator[HttpUpstream]:
    upstream = start_http_upstream("sse", name="events")
    try:
        yield upstream
    finally:
        upstream.stop()


_DB_DIR = Path(tempfile.mkdtemp(prefix="mcp-aggregator-tests-"))
atexit.register(shutil.rmtree, _DB_DIR, True)


def settings_for(
    *servers: ServerConfig,
    database_url: str | None = None,
    search: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
    **serve: Any,
) -> Settings:
    """Settings for a test gateway: its own SQLite file, lexical-only search unless asked."""
    data: dict[str, Any] = {"servers": [s.model_dump() for s in servers]}
    data["serve"] = {"exposure": "passthrough", **serve}
    data["registry"] = {"database_url": database_url or f"sqlite+aiosqlite:///{_DB_DIR / uuid.uuid4().hex}.db"}
    data["search"] = search if search is not None else {"embedder": "none"}
    data.update(sections or {})
    return Settings.model_validate(data)


@asynccontextmanager
async def serving_gateway(settings: Settings, *, settle: float = 30.0) -> AsyncIterator[tuple[Gateway, GatewayServer]]:
    """A gateway with its MCP server running; connect clients to ``gateway_server.server``."""
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(settle)
        gateway_server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(gateway_server.run)
            yield gateway, gateway_server
            tg.cancel_scope.cancel()
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()


@asynccontextmanager
async def running_gateway(
    settings: Settings, *, mode: str = "auto", settle: float = 30.0
) -> AsyncIterator[tuple[Gateway, Client]]:
    """A gateway with its MCP server, and an in-process SDK client connected to it."""
    async with (
        serving_gateway(settings, settle=settle) as (gateway, gateway_server),
        Client(gateway_server.server, mode=mode, cache=None) as client,
    ):
        yield gateway, client
