"""Kill the gateway process (SIGKILL) while admins register servers through its REST API;
the registry it leaves behind must hold only whole registrations, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import yaml

from mcp_aggregator.admin.admin_token import read_admin_token
from mcp_aggregator.registry import Registry
from mcp_aggregator.serve.runner import bind_socket
from tests.conftest import REPO
from tests.registry.conftest import Database

ANNOUNCE = "MCP endpoint (streamable HTTP): "


def start_gateway(config: Path) -> tuple[subprocess.Popen[str], str]:
    with bind_socket("127.0.0.1", 0) as probe:
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if ANNOUNCE in line:
            return process, line.split(ANNOUNCE, 1)[1].strip().removesuffix("/mcp")
    process.wait()
    raise RuntimeError("the gateway exited before serving")


def body(index: int) -> dict[str, object]:
    return {
        "name": f"crash-{index:03d}",
        "transport_type": "HTTP",
        "connection_config": {"base_url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
        "description": f"registration number {index}",
        "auto_connect": False,
    }


async def test_killing_the_gateway_mid_registration_leaves_only_whole_servers(
    database: Database, tmp_path: Path
) -> None:
    config = tmp_path / "aggregator.yaml"
    registry = {"database_url": database.url, "pg_schema": database.pg_schema}
    data_dir = tmp_path / "data"
    serve = {"data_dir": str(data_dir)}
    config.write_text(yaml.safe_dump({"registry": registry, "search": {"embedder": "none"}, "serve": serve}))
    process, base = start_gateway(config)
    token = read_admin_token(data_dir)
    assert token is not None, "the gateway keeps the admin token it made in the data dir"
    created: list[str] = []
    try:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, timeout=30, headers=headers) as client:
            for index in range(8):
                response = await client.post("/api/v1/aggregator/servers", json=body(index))
                assert response.status_code == 201, response.text
                created.append(response.json()["name"])

            async def in_flight() -> None:
                # The process dies under this request: that is the point.
                with contextlib.suppress(httpx.HTTPError):
                    await client.post("/api/v1/aggregator/servers", json=body(99))

            async with anyio.create_task_group() as tg:
                tg.start_soon(in_flight)
                await anyio.lowlevel.checkpoint()
                os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert process.stderr is not None
        process.stderr.close()

    async with Registry(database.settings()) as reopened:
        servers = {s.name: s for s in await reopened.list_servers()}
        assert set(created) <= set(servers) <= {*created, "crash-099"}
        for server in servers.values():
            assert server.connection_config["headers"] == {"Authorization": "Bearer x"}
            assert server.description is not None and server.description.startswith("registration number")
            assert server.tool_count == len(await reopened.list_tools(server.id)) == 0

    restarted, base = start_gateway(config)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, timeout=30, headers=headers) as client:
            listed = (await client.get("/api/v1/aggregator/servers")).json()
            assert {s["name"] for s in listed} == set(servers), "API registrations survive a restart"
    finally:
        restarted.terminate()
        restarted.wait(timeout=30)
        assert restarted.stderr is not None
        restarted.stderr.close()
