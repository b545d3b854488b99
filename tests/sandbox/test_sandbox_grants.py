"""What a sandboxed server may read, as started and as shown: the working directory, relative
grants, the gateway's files outside its data dir, a script's interpreter, the network after
a fallback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.admin.server_views import sandbox_view
from mcp_aggregator.errors import SandboxError
from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.sandbox import SandboxConfig, sandbox_launch
from mcp_aggregator.sandbox.launch_plan import HostFacts
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch, _resolve_allow_list, host_facts
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective
from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, running_gateway, settings_for

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
FACTS = HostFacts(bwrap="/usr/bin/bwrap", slirp4netns="/s", nft="/n", nsenter="/x", cgroups=None)


def hostile(sandbox: SandboxConfig, **extra: object) -> ServerConfig:
    fields: dict[str, object] = {"cwd": str(REPO)} | extra
    return ServerConfig(
        name="hostile",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.sandbox.hostile_server"),
        sandbox=sandbox,
        **fields,  # type: ignore[arg-type]
    )


def launch(
    tmp_path: Path,
    sandbox: SandboxConfig,
    cwd: str | None,
    command: str = "/bin/true",
    args: tuple[str, ...] = (),
    facts: HostFacts = FACTS,
) -> SandboxLaunch:
    site = SandboxSite(SandboxConfig(), tmp_path / "data")
    merged = effective(site.defaults, sandbox)
    return SandboxLaunch("notes", command, args, {}, cwd, merged, site, {"PATH": "/usr/bin:/bin"}, facts)


@pytest.fixture
def operator_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "operator"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("where", ["home", "above home", "root"])
def test_a_working_directory_that_would_show_the_operators_home_is_refused_naming_cwd(
    tmp_path: Path, operator_home: Path, where: str
) -> None:
    cwd = {"home": operator_home, "above home": operator_home.parent, "root": Path("/")}[where]
    with pytest.raises(SandboxError, match=r"notes: cwd: .* would show the whole of it"):
        launch(tmp_path, SandboxConfig(network="none"), str(cwd)).prepare()


def test_relative_grants_are_the_servers_cwds_and_the_status_shows_them_resolved_with_the_cwd(
    tmp_path: Path, operator_home: Path
) -> None:
    app = tmp_path / "app"
    (app / "notes").mkdir(parents=True)
    (app / "docs").mkdir()
    started = launch(tmp_path, SandboxConfig(read=("docs",), write=("./notes",), network="none"), str(app))
    plan = started.prepare()
    assert str(app / "notes") in plan.argv and str(app / "docs") in plan.argv
    applied = started.applied()
    assert (applied["read"], applied["write"], applied["cwd"]) == ([str(app / "docs")], [str(app / "notes")], str(app))


def test_an_allow_list_name_without_an_ipv4_address_or_only_on_loopback_fails_the_start_naming_it() -> None:
    def resolve(host: str, port: int, **_kw: object) -> list[tuple[object, ...]]:
        """A resolver whose ``v6.example`` has an AAAA record only (DNS is off the test's network)."""
        if host == "v6.example":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2001:db8::1", port, 0, 0))]
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)

    with pytest.raises(SandboxError, match=r"sandbox.network\[1\]: 'v6.example' has no IPv4 address"):
        _resolve_allow_list("s", ("192.0.2.1:443", "v6.example:443"), resolve=resolve)
    loopback = _loopback_name()
    if loopback is not None:
        with pytest.raises(SandboxError, match=r"sandbox.network\[0\]: .* is the host's loopback"):
            _resolve_allow_list("s", (f"{loopback}:443",))


def _loopback_name() -> str | None:
    """A name other than ``localhost`` that this host resolves to its loopback (``/etc/hosts``)."""
    for name in (socket.gethostname(), "runsc", "vm", "localhost.localdomain"):
        try:
            infos = socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)
        except OSError:
            continue
        if name != "localhost" and all(str(info[4][0]).startswith("127.") for info in infos):
            return name
    return None


async def test_a_script_whose_env_interpreter_lives_outside_the_system_runs_sandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``#!/usr/bin/env mynode`` with ``mynode`` in an nvm-style folder: its ``bin`` is on PATH."""
    runtime = tmp_path / "nvm" / "versions" / "v1" / "bin"
    runtime.mkdir(parents=True)
    (runtime / "mynode").write_text('#!/bin/sh\necho "ran by mynode: $2"\n')
    (runtime / "mynode").chmod(0o755)
    package = tmp_path / "pkg" / "bin"
    package.mkdir(parents=True)
    (package / "tool").write_text("#!/usr/bin/env mynode\n")
    (package / "tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{runtime}:/usr/bin:/bin")
    facts = replace(host_facts(), cgroups=None)
    started = launch(tmp_path, SandboxConfig(network="none"), None, str(package / "tool"), ("hello",), facts)
    plan = started.prepare()
    with anyio.fail_after(30):
        async with started.running() as spawn:
            process = await anyio.open_process(
                list(spawn.argv), env=dict(spawn.env), pass_fds=spawn.pass_fds, stdin=subprocess.DEVNULL
            )
            async with process:
                await started.release()
                assert process.stdout is not None and process.stderr is not None
                out = b"".join([chunk async for chunk in process.stdout]).decode()
                err = b"".join([chunk async for chunk in process.stderr]).decode()
                await process.wait()
    assert process.returncode == 0, err
    assert out == "ran by mynode: hello\n"
    assert str(runtime) in plan.env["PATH"].split(":")


async def test_the_registry_and_search_cache_outside_the_data_dir_are_hidden_from_a_grant(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    cache = shared / "embeddings.db"
    (shared / "visible.txt").write_text("fine")
    settings = settings_for(
        hostile(SandboxConfig(read=(str(shared),), network="none")),
        database_url=f"sqlite+aiosqlite:///{shared / 'registry.db'}",
        search={"embedder": "none", "cache_path": str(cache)},
        data_dir=str(tmp_path / "data"),
    )
    async with running_gateway(settings) as (gateway, _client):
        for database in (shared / "registry.db", cache):
            assert (await anyio.Path(database).read_bytes()).startswith(b"SQLite format 3")
        assert await anyio.Path(f"{cache}-wal").exists()  # the cache keeps a write-ahead log
        # Run as root the sandbox is not the registry's owner; run as its user, it would be.
        await anyio.Path(shared / "registry.db").chmod(0o644)

        async def read(path: Path) -> str:
            result = await gateway.call_tool("hostile.read", {"path": str(path)})
            return result.content[0].text  # type: ignore[attr-defined, no-any-return]

        assert await read(shared / "visible.txt") == "ok: fine"
        # Masked by /dev/null, on a mount without devices: opening it is refused.
        for hidden in (shared / "registry.db", cache, Path(f"{cache}-wal")):
            assert (await read(hidden)).startswith("refused: PermissionError"), hidden


async def test_after_the_network_fallback_the_status_shows_the_network_the_server_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_slirp = replace(host_facts(), slirp4netns=None)
    monkeypatch.setattr(sandbox_launch, "host_facts", lambda: without_slirp)
    settings = settings_for(hostile(SandboxConfig()), data_dir=str(tmp_path / "data"))
    settings = settings.model_copy(update={"health": HealthSettings(reconnect_max_attempts=1)})
    async with running_gateway(settings) as (gateway, _client):
        view = sandbox_view(gateway.supervisors["hostile"])
        assert view is not None and view["active"] is True
        assert view["network"] == "host"
        assert view["cwd"] == str(REPO)
        assert any("shares the host's network" in warning for warning in view["warnings"])
        assert os.path.isabs(view["cwd"])


@pytest.mark.skipif(shutil.which("slirp4netns") is None, reason="slirp4netns is not installed")
async def test_an_allow_list_server_sees_only_its_own_hosts_file(tmp_path: Path) -> None:
    settings = settings_for(hostile(SandboxConfig(network=["192.0.2.1:443"])), data_dir=str(tmp_path / "data"))
    async with running_gateway(settings) as (gateway, _client):
        result = await gateway.call_tool("hostile.read", {"path": "/etc/hosts"})
        assert result.content[0].text == "ok: 127.0.0.1 localhost\n"  # type: ignore[union-attr]
