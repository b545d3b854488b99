"""A stdio server start that is cancelled leaves no pipe open behind it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters, get_default_environment

from mcp_aggregator.isolation.config import SandboxConfig
from mcp_aggregator.isolation.sandbox_launch import SandboxLaunch
from mcp_aggregator.isolation.sandbox_policy import SandboxSite, effective
from mcp_aggregator.upstreams.stdio_pipe import StdioPipe
from tests.conftest import REPO


def _open_pipes() -> set[str]:
    """This process's file descriptors that are pipes (their link names the pipe's inode)."""
    pipes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            pipes.add(f"{fd}={target}")
    return pipes


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandboxed"])
async def test_a_start_cancelled_while_its_pipes_connect_closes_all_of_them(tmp_path: Path, sandboxed: bool) -> None:
    args = ("-m", "tests.upstream.fixture_server", "stdio")
    params = StdioServerParameters(command=sys.executable, args=list(args), cwd=str(REPO))
    launch = None
    if sandboxed:
        site = SandboxSite(SandboxConfig(), tmp_path / "data")
        sandbox = effective(site.defaults, None)
        launch = SandboxLaunch("alpha", sys.executable, args, {}, str(REPO), sandbox, site, get_default_environment())
        launch.prepare()
    before = _open_pipes()
    pipe = StdioPipe(params, name="alpha", max_message_bytes=1 << 20, launch=launch)
    # Cancelled from the start: the cancellation lands at the first wait inside the spawn,
    # while asyncio connects the process's pipes.
    with anyio.CancelScope() as scope:
        scope.cancel()
        async with pipe.open():
            await anyio.sleep_forever()
    with anyio.fail_after(10):
        while _open_pipes() - before:
            await anyio.lowlevel.checkpoint()
