"""A hostile stdio upstream tries what a compromised package would; its sandbox refuses or
contains each attempt while the gateway and a second upstream keep serving."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.admin.server_views import sandbox_view
from mcp_aggregator.errors import UpstreamClosedError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.sandbox.sandbox_launch import host_facts
from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, running_gateway, settings_for, stdio_fixture

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
needs_cgroups = pytest.mark.skipif(host_facts().cgroups is None, reason="no writable cgroup on this host")


def hostile(sandbox: SandboxConfig | None = None, name: str = "hostile") -> ServerConfig:
    return ServerConfig(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.sandbox.hostile_server"),
        cwd=str(REPO),
        sandbox=sandbox,
    )


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


@asynccontextmanager
async def attacked(tmp_path: Path, sandbox: SandboxConfig | None = None) -> AsyncIterator[Gateway]:
    """A gateway (data dir with an admin token and a secret key) over the hostile upstream
    and a well-behaved one; the operator's HOME has an SSH key and a ``.bashrc``."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "admin_token").write_text("ADMIN-TOKEN-CANARY")
    settings = settings_for(hostile(sandbox), stdio_fixture("beta"), data_dir=str(data))
    settings = settings.model_copy(update={"health": HealthSettings(reconnect_max_attempts=1)})
    async with running_gateway(settings) as (gateway, _client):
        yield gateway


@pytest.fixture
def operator_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "operator"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SSH-KEY-CANARY")
    (home / ".bashrc").write_text("# the operator's\n")
    monkeypatch.setenv("HOME", str(home))
    return home


async def call(gateway: Gateway, tool: str, **arguments: object) -> str:
    return text_of(await gateway.call_tool(f"hostile.{tool}", arguments))


async def test_an_unsandboxed_upstream_reads_the_gateways_secrets(tmp_path: Path, operator_home: Path) -> None:
    """The control: with the sandbox off, the attack works (so the refusals below mean something)."""
    async with attacked(tmp_path, SandboxConfig(enabled=False)) as gateway:
        assert await call(gateway, "read", path=str(tmp_path / "data" / "admin_token")) == "ok: ADMIN-TOKEN-CANARY"
        assert await call(gateway, "read", path="~/.ssh/id_rsa") == "ok: SSH-KEY-CANARY"


async def test_a_sandboxed_upstream_cannot_read_secrets_write_home_or_reach_local_services(
    tmp_path: Path, operator_home: Path
) -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with attacked(tmp_path) as gateway:
            data = tmp_path / "data"
            assert (data / "secret_key").exists()  # made by the gateway at start
            for secret in (data / "admin_token", data / "secret_key", operator_home / ".ssh" / "id_rsa"):
                assert (await call(gateway, "read", path=str(secret))).startswith("refused: FileNotFoundError")
            assert (await call(gateway, "read", path="~/.ssh/id_rsa")).startswith("refused")
            assert (await call(gateway, "read", path=f"/proc/{os.getpid()}/environ")).startswith("refused")
            assert (await call(gateway, "write", path=str(operator_home / ".bashrc"), text="evil")).startswith(
                "refused"
            )
            assert await call(gateway, "write", path="~/.bashrc", text="evil") == "ok: written"  # its own home
            assert (operator_home / ".bashrc").read_text() == "# the operator's\n"
            # Outside its grants it writes into nothing that lasts: its own /tmp, or a refusal.
            await call(gateway, "write", path=str(tmp_path / "outside.txt"), text="x")
            assert not (tmp_path / "outside.txt").exists()
            assert (await call(gateway, "write", path=str(REPO / "hostile-was-here"), text="x")).startswith(
                "refused: OSError: [Errno 30] Read-only"
            )
            assert (await call(gateway, "connect", host="127.0.0.1", port=port)).startswith("refused")
            for address in host_facts().addresses:
                assert (await call(gateway, "connect", host=address, port=port)).startswith("refused")
            environment = (await gateway.call_tool("hostile.environment", {})).structured_content
            assert environment is not None
            assert set(environment) <= {"PATH", "HOME", "LANG", "TMPDIR", "PWD"}  # PWD: set by bwrap
            assert text_of(await gateway.call_tool("beta.echo", {"text": "still here"})) == "still here"


async def test_a_sandboxed_upstream_writes_only_inside_its_write_grant(tmp_path: Path, operator_home: Path) -> None:
    notes, reference = tmp_path / "notes", tmp_path / "reference"
    notes.mkdir()
    reference.mkdir()
    (reference / "manual.txt").write_text("read me")
    grants = SandboxConfig(read=(str(reference),), write=(str(notes),), network="none")
    async with attacked(tmp_path, grants) as gateway:
        assert await call(gateway, "write", path=str(notes / "n.txt"), text="kept") == "ok: written"
        assert (notes / "n.txt").read_text() == "kept"
        assert await call(gateway, "read", path=str(reference / "manual.txt")) == "ok: read me"
        assert (await call(gateway, "write", path=str(reference / "manual.txt"), text="x")).startswith(
            "refused: OSError: [Errno 30] Read-only"
        )


@needs_cgroups
async def test_a_fork_bomb_stops_at_the_process_limit_and_the_gateway_keeps_serving(
    tmp_path: Path, operator_home: Path
) -> None:
    async with attacked(tmp_path, SandboxConfig(processes=32)) as gateway:
        outcome = await call(gateway, "fork_bomb", most=500)
        assert outcome.startswith("refused: BlockingIOError"), outcome
        assert int(outcome.rsplit(" ", 2)[1]) < 32
        assert text_of(await gateway.call_tool("beta.echo", {"text": "fine"})) == "fine"
        assert text_of(await gateway.call_tool("hostile.read", {"path": "/etc/hostname"})).startswith("refused")


@needs_cgroups
async def test_a_memory_bomb_ends_the_server_and_its_status_names_the_memory_limit(
    tmp_path: Path, operator_home: Path
) -> None:
    async with attacked(tmp_path, SandboxConfig(memory_mb=128)) as gateway:
        with pytest.raises(UpstreamClosedError):
            await call(gateway, "memory_bomb", megabytes=1024)
        supervisor = gateway.supervisors["hostile"]
        await gateway.wait_until(lambda: "limit" in (supervisor.last_error or ""), timeout_secs=10)
        assert "it exceeded its sandbox's memory limit" in (supervisor.last_error or "")
        assert text_of(await gateway.call_tool("beta.echo", {"text": "fine"})) == "fine"
        # The next start is a new process: the label was the last one's (its reason stays).
        await gateway.wait_until(lambda: supervisor.status is ServerStatus.CONNECTED, timeout_secs=20)
        assert supervisor.limit_hit is None
        assert sandbox_view(supervisor)["limit_hit"] is None  # type: ignore[index]


@needs_cgroups
async def test_a_server_refused_a_fork_that_then_exits_cleanly_was_not_ended_by_a_limit(
    tmp_path: Path, operator_home: Path
) -> None:
    async with attacked(tmp_path, SandboxConfig(processes=32)) as gateway:
        assert (await call(gateway, "fork_bomb", most=500)).startswith("refused: BlockingIOError")
        supervisor = gateway.supervisors["hostile"]
        first = supervisor.connection
        with pytest.raises(UpstreamClosedError):
            await call(gateway, "exit", code=0)
        await gateway.wait_until(
            lambda: supervisor.connection not in (None, first) and supervisor.status is ServerStatus.CONNECTED,
            timeout_secs=20,
        )
        assert supervisor.limit_hit is None
        assert "limit" not in (supervisor.last_error or ""), supervisor.last_error


@needs_cgroups
async def test_a_limit_hit_while_the_server_starts_is_named_in_its_error_and_status(
    tmp_path: Path, operator_home: Path
) -> None:
    data = tmp_path / "data"
    settings = settings_for(
        hostile(SandboxConfig(processes=2), name="forks"),
        hostile(SandboxConfig(memory_mb=1), name="eats"),
        data_dir=str(data),
    )
    settings = settings.model_copy(update={"health": HealthSettings(reconnect_max_attempts=1)})
    async with running_gateway(settings, settle=20) as (gateway, _client):
        for name, limit in (("forks", "processes"), ("eats", "memory")):
            supervisor = gateway.supervisors[name]
            await gateway.wait_until(lambda s=supervisor: s.status is ServerStatus.ERROR, timeout_secs=20)  # type: ignore[misc]
            assert f"it exceeded its sandbox's {limit} limit" in (supervisor.error_message or ""), (
                supervisor.error_message
            )
            assert supervisor.limit_hit == limit
            view = sandbox_view(supervisor)
            assert view is not None and view["limit_hit"] == limit


async def test_a_cpu_hog_is_ended_at_its_cpu_limit(tmp_path: Path, operator_home: Path) -> None:
    async with attacked(tmp_path, SandboxConfig(cpu_secs=2)) as gateway:
        with pytest.raises(UpstreamClosedError):
            await call(gateway, "spin", seconds=30)
        supervisor = gateway.supervisors["hostile"]
        await gateway.wait_until(lambda: supervisor.limit_hit is not None, timeout_secs=10)
        assert supervisor.limit_hit == "cpu"
        assert text_of(await gateway.call_tool("beta.echo", {"text": "fine"})) == "fine"
