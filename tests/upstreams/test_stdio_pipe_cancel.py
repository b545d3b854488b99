"""A stdio server start that is cancelled leaves no pipe open behind it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters, get_default_environment

from mcp_aggregator.sandbox.config import SandboxConfig
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective
from mcp_aggregator.upstreams.stdio_pipe import StdioPipe
from tests.conftest import REPO


def _group_members(pgid: int) -> list[int]:
    """Live processes in process group ``pgid`` (field 5 of /proc/<pid>/stat; zombies aside)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


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
    # Nothing of the server's process group is left either: a sandbox caught mid set-up has a
    # pid-namespace init that ignores SIGTERM, and it must not outlive the start.
    assert pipe.pid is not None
    with anyio.fail_after(10):
        while _group_members(pipe.pid):
            await anyio.lowlevel.checkpoint()


# The leader obeys SIGTERM; the child it forked (same process group) ignores it, as bwrap's
# pid-namespace init does while it waits for its parent during set-up.
_STUBBORN_CHILD = """
import os, signal, sys, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(sys.argv[1], "w").write(str(os.getpid()))
    while True:
        time.sleep(60)
sys.stdin.read()
time.sleep(3600)
"""


async def test_a_stopped_server_leaves_no_member_of_its_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    params = StdioServerParameters(command=sys.executable, args=["-c", _STUBBORN_CHILD, str(marker)])
    pipe = StdioPipe(params, name="stubborn", max_message_bytes=1 << 20)
    with anyio.fail_after(30):
        async with pipe.open():
            while not marker.exists() or not marker.read_text():
                await anyio.lowlevel.checkpoint()
        assert pipe.pid is not None
        # The pipe's stop waits its grace period, then ends the group: poll for what is left.
        while _group_members(pipe.pid):
            await anyio.lowlevel.checkpoint()
