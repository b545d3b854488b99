"""``/healthz`` (and ``/readyz``) answer throughout a start: ten stdio upstreams of a hundred tools each start,
list and are indexed (the real embedding model) while the health check is asked again and again. No timing is measured
here beyond a generous deadline per answer (CI shares two cores); ``bench/startup_bench.py``
measures the start at the seed's scale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from tests.conftest import REPO
from tests.ports import free_port
from tests.processes import stop

SERVERS = 10
TOOLS = 100
DEADLINE_SECS = 5.0
"""Each answer once listening; the gateway's goal is 1 s, the rest is CI's shared cores."""


def _config(tmp_path: Path, port: int) -> Path:
    servers = [
        {
            "name": f"s{i}",
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "tests.upstream.paged_server", "--tools", str(TOOLS), "--page", str(TOOLS)],
            "cwd": str(REPO),
        }
        for i in range(SERVERS)
    ]
    config = {
        "servers": servers,
        "serve": {"port": port, "data_dir": str(tmp_path / "data"), "admin_token": "t" * 32},
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def _until_listening(process: Process, log: list[str]) -> None:
    assert process.stderr is not None
    async for chunk in TextReceiveStream(process.stderr):
        log.append(chunk)
        if "MCP endpoint" in "".join(log):
            return
    raise AssertionError("the gateway exited before listening:\n" + "".join(log))


async def _drain(process: Process, log: list[str]) -> None:
    assert process.stderr is not None
    async for chunk in TextReceiveStream(process.stderr):
        log.append(chunk)


def _consistent(health: dict[str, Any]) -> bool:
    """``starting`` exactly while some server's first connection is still being made."""
    connecting = any(status == "CONNECTING" for status in health["servers"].values())
    return (health["status"] == "starting") == connecting


async def test_healthz_answers_within_its_deadline_throughout_a_start_of_ten_servers(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(_config(tmp_path, port))]
    log: list[str] = []
    seen: list[dict[str, Any]] = []
    process = await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    try:
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(60):
                await _until_listening(process, log)
            tg.start_soon(_drain, process, log)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                with anyio.fail_after(100):
                    # Until every server had its first try and its tools are served: the
                    # costly part (ten processes starting, listing, indexing) is behind.
                    while not seen or seen[-1]["status"] != "ok" or seen[-1]["tools"] < SERVERS * TOOLS:
                        with anyio.fail_after(DEADLINE_SECS):
                            answer = await http.get("/healthz")
                        assert answer.status_code == 200
                        seen.append(answer.json())
                        assert _consistent(seen[-1]), seen[-1]
                        with anyio.fail_after(DEADLINE_SECS):
                            ready = await http.get("/readyz")
                        # Ready exactly when every server had its first try (the same body).
                        assert ready.status_code == (200 if ready.json()["status"] == "ok" else 503), ready.text
            tg.cancel_scope.cancel()
    finally:
        await stop(process)
    statuses = [health["status"] for health in seen]
    # Once every server had its first try the gateway never says it is starting again.
    assert statuses[statuses.index("ok") :] == ["ok"] * (len(statuses) - statuses.index("ok"))
    final = seen[-1]
    assert final["servers"] == {f"s{i}": "CONNECTED" for i in range(SERVERS)}
    assert final["tools"] == SERVERS * TOOLS, "".join(log)[-2000:]
