"""A start whose sandbox bwrap could not set up is made again at once, within the same
attempt: the server connects on its first attempt, with no backoff and no failure shown."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, running_gateway, settings_for

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# The first start says what bwrap says when it cannot bring up the namespace's loopback and
# exits before the server runs; every later start runs the fixture server.
_FLAKY_SETUP = """
import os, runpy, sys
starts = os.path.join(sys.argv[1], "starts")
with open(starts, "a") as log:
    log.write("x")
if os.path.getsize(starts) == 1:
    print("bwrap: loopback: Failed RTM_NEWADDR: No child processes", file=sys.stderr, flush=True)
    sys.exit(1)
sys.argv = ["fixture_server", "stdio"]
runpy.run_module("tests.upstream.fixture_server", run_name="__main__")
"""


def flaky(tmp_path: Path) -> ServerConfig:
    return ServerConfig(
        name="alpha",
        transport="stdio",
        command=sys.executable,
        args=("-c", _FLAKY_SETUP, str(tmp_path)),
        cwd=str(REPO),
        sandbox=SandboxConfig(write=(str(tmp_path),), network="none"),
    )


async def test_a_failed_sandbox_set_up_is_started_again_within_the_first_attempt(tmp_path: Path) -> None:
    settings = settings_for(flaky(tmp_path)).model_copy(
        # One attempt and a backoff longer than the test: only the immediate restart can connect it.
        update={"health": HealthSettings(reconnect_max_attempts=1, reconnect_backoff_base_secs=600)}
    )
    async with running_gateway(settings) as (gateway, _client):
        sup = gateway.supervisor("alpha")
        with anyio.fail_after(30):
            await gateway.wait_until(
                lambda: sup.status in (ServerStatus.CONNECTED, ServerStatus.ERROR), timeout_secs=30
            )
        assert sup.status is ServerStatus.CONNECTED, sup.last_error
        assert (tmp_path / "starts").read_text() == "xx"
        assert sup.last_error is None
        result = await gateway.call_tool("alpha__echo", {"text": "after"})
        assert result.content[0].text == "after"  # type: ignore[union-attr]


async def test_a_server_that_fails_on_its_own_is_not_started_again_at_once(tmp_path: Path) -> None:
    config = ServerConfig(
        name="alpha",
        transport="stdio",
        command=sys.executable,
        args=("-c", "import sys; open(sys.argv[1] + '/starts', 'a').write('x'); sys.exit(1)", str(tmp_path)),
        sandbox=SandboxConfig(write=(str(tmp_path),), network="none"),
    )
    settings = settings_for(config).model_copy(
        update={"health": HealthSettings(reconnect_max_attempts=1, reconnect_backoff_base_secs=600)}
    )
    async with running_gateway(settings) as (gateway, _client):
        sup = gateway.supervisor("alpha")
        with anyio.fail_after(30):
            await gateway.wait_until(lambda: sup.status is ServerStatus.ERROR, timeout_secs=30)
        assert (tmp_path / "starts").read_text() == "x"
