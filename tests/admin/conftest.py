"""The admin app served by a real uvicorn on 127.0.0.1, over a real gateway and database.

Database tests run on SQLite (a temp file) and PostgreSQL (a schema per test) through the
registry tests' ``database`` fixture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from mcp_aggregator.admin import build_admin_app
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health import ServerStatus
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.settings import ServerConfig, Settings, Transport
from tests.conftest import settings_for, start_http_upstream, stdio_fixture
from tests.registry.conftest import Database, database

__all__ = ["database"]

SETTLE_SECS = 30.0
API = "/api/v1/aggregator"
TEST_ADMIN_TOKEN = "admin-token-for-the-tests-0123456789"


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Database:
    """For tests whose point is not the database: SQLite only."""
    return Database(f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}", "mcp")


def admin_settings(
    db: Database, *servers: ServerConfig, limits: dict[str, int] | None = None, **serve: Any
) -> Settings:
    registry = {"database_url": db.url, "pg_schema": db.pg_schema, "limits": limits or {}}
    return settings_for(*servers, sections={"registry": registry}, **serve)


@pytest.fixture(scope="session")
def upstream_url() -> Iterator[str]:
    """One fixture upstream over streamable HTTP for the whole session.

    Gateway servers of any name can point at it; connecting over HTTP costs a handshake,
    where each stdio upstream would cost a Python start-up (seconds on a loaded machine).
    """
    upstream = start_http_upstream("http", name="web")
    try:
        yield upstream.mcp_url
    finally:
        upstream.stop()


def http_server(name: str, url: str, **extra: Any) -> ServerConfig:
    return ServerConfig(name=name, transport=Transport.HTTP, base_url=url, **extra)


def http_body(name: str, url: str, *, auto_connect: bool = True, **extra: Any) -> dict[str, Any]:
    """A registration body for the shared HTTP upstream."""
    return {
        "name": name,
        "description": f"fixture {name}",
        "transport_type": "HTTP",
        "connection_config": {"base_url": url} | extra,
        "auto_connect": auto_connect,
    }


def stdio_body(name: str, *, auto_connect: bool = True, **extra: Any) -> dict[str, Any]:
    """A registration body for the fixture upstream over stdio, as ``stdio_fixture`` runs it."""
    fixture = stdio_fixture("fixture")
    connection = {"command": fixture.command, "args": list(fixture.args), "cwd": fixture.cwd}
    return {
        "name": name,
        "description": f"fixture {name}",
        "transport_type": "stdio",
        "connection_config": connection | extra,
        "auto_connect": auto_connect,
    }


@dataclass
class AdminClient:
    gateway: Gateway
    http: httpx.AsyncClient

    async def settle(self) -> None:
        """Until every server's connection attempt resolved (CONNECTED or ERROR)."""
        await self.gateway.wait_settled(SETTLE_SECS)

    async def server_id(self, name: str) -> str:
        servers = (await self.http.get(f"{API}/servers")).json()
        return next(s["id"] for s in servers if s["name"] == name)


@asynccontextmanager
async def served_app(app: FastAPI) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a loopback port; yields the base URL.

    The socket listens before the server task starts, so requests sent at once wait in
    the backlog instead of racing the start-up.
    """
    with bind_socket("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none", http="h11")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


@asynccontextmanager
async def serve_admin(settings: Settings, *, send_token: bool = True) -> AsyncIterator[AdminClient]:
    """A running gateway, its admin app over HTTP, and a client sending the admin token
    (``serve.admin_token``, else a test token) unless ``send_token`` is false."""
    token = settings.serve.admin_token or TEST_ADMIN_TOKEN
    headers = {"Authorization": f"Bearer {token}"} if send_token else {}
    async with (
        Gateway(settings) as gateway,
        served_app(build_admin_app(gateway, token=token)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers=headers, timeout=SETTLE_SECS) as http,
    ):
        yield AdminClient(gateway, http)


async def wait_for_status(gateway: Gateway, name: str, status: ServerStatus) -> None:
    """Until ``name`` is in ``status``; woken by the gateway's change events, not by polling."""
    with anyio.fail_after(SETTLE_SECS):
        while gateway.supervisors[name].status is not status:
            changed = anyio.Event()
            unsubscribe = gateway.on_change(changed.set)
            try:
                if gateway.supervisors[name].status is not status:
                    await changed.wait()
            finally:
                unsubscribe()
