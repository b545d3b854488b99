"""Every command takes the same global options, and each prints parseable JSON with ``--json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
import yaml

from mcp_aggregator.cli import app
from mcp_aggregator.settings import ServerConfig, Transport
from tests.cli.conftest import Cli, run_cli
from tests.cli.test_servers_commands import fixture_args
from tests.conftest import REPO, stdio_fixture
from tests.serve.http_face import face_settings, http_face

oauth_servers = pytest.importorskip("tests.upstream.oauth_servers", reason="upstream sign-in is not in this build")

LOCAL = {"serve", "check-config", "query", "servers", "tools forget-uses"}
"""Commands that run a gateway of their own: they have no running gateway to point at."""
START_SECS = 60.0


def every_command() -> dict[str, Any]:
    """Each command by its words (``servers remove``); a group that runs on its own counts too.

    Typer carries its own copy of click, so commands are told apart by shape, not class;
    each is asked of its group (``get_command``), which loads a lazy one.
    """
    found: dict[str, Any] = {}

    def walk(prefix: str, command: Any) -> None:
        if hasattr(command, "commands"):
            if command.invoke_without_command and prefix:
                found[prefix] = command
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                walk(f"{prefix} {name}".strip(), command.get_command(ctx, name))
        else:
            found[prefix] = command

    walk("", typer.main.get_command(app))
    return found


def option_names(command: Any) -> set[str]:
    return {opt for param in command.params if param.param_type_name == "option" for opt in param.opts}


def test_every_command_takes_config_and_json_and_every_remote_one_gateway_and_token() -> None:
    commands = every_command()
    assert {"servers remove", "check-config", "query", "serve", "audit", "tools call"} <= set(commands)
    missing = {
        words: sorted({"--config", "--json"} - option_names(command))
        for words, command in commands.items()
        if {"--config", "--json"} - option_names(command)
    }
    assert missing == {}
    remote = {words for words in commands if words not in LOCAL}
    without_target = sorted(w for w in remote if {"--gateway", "--token"} - option_names(commands[w]))
    assert without_target == []


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "aggregator.yaml"
    config = {
        "servers": [stdio_fixture("alpha").model_dump(mode="json")],
        "serve": {"data_dir": str(tmp_path / "data"), "port": 0},
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/local.db"},
        "search": {"embedder": "none"},
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def test_every_command_prints_json_with_the_json_option(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    printed: dict[str, object] = {}
    async with oauth_servers.oauth_world() as world:
        protected = ServerConfig.model_validate(
            {"name": "protected", "transport": Transport.HTTP, "base_url": world.mcp_url, "auth": "oauth"}
        )
        async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), protected)) as face:
            await face.gateway.wait_settled(30)
            cli = Cli(face)
            remote = [
                ["servers", "list"],
                ["servers", "show", "alpha"],
                ["servers", "add", "beta", *fixture_args("beta")],
                ["servers", "disconnect", "beta"],
                ["servers", "connect", "beta"],
                ["servers", "remove", "beta"],
                ["servers", "login", "protected", "--no-browser", "--wait", "0"],
                ["tools", "list"],
                ["tools", "search", "add two integers"],
                ["tools", "call", "alpha.add", "--arg", "a=1", "--arg", "b=2"],
                ["tools", "approve", "alpha"],
                ["audit"],
                ["profiles"],
            ]
            for args in remote:
                result = await cli(*args, "--json")
                assert result.exit_code == 0, (args, result.stderr)
                printed[" ".join(args[:2])] = json.loads(result.stdout)
    for args in (["check-config", "--config", str(config)], ["query", "needle", "--config", str(config)],
                 ["servers", "--config", str(config)], ["tools", "forget-uses", "--config", str(config)]):  # fmt: skip
        result = await run_cli(*args, "--json")
        assert result.exit_code == 0, (args, result.stderr)
        key = {"servers": "servers --config", "tools": "tools forget-uses"}.get(args[0], args[0])
        printed[key] = json.loads(result.stdout)
    printed["serve"] = await serve_announcement(config)

    assert printed["servers remove"] == {"removed": "beta", "id": printed["servers add"]["id"]}  # type: ignore[index]
    assert printed["servers login"]["authorization_url"].startswith(world.issuer)  # type: ignore[index]
    assert printed["check-config"]["servers"][0]["name"] == "alpha"  # type: ignore[index]
    assert printed["query"]["metadata"]["serversQueried"] == 1  # type: ignore[index]
    assert printed["servers --config"] == [
        {"name": "alpha", "status": "CONNECTED", "tool_count": printed["servers --config"][0]["tool_count"],  # type: ignore[index]
         "error_message": None}
    ]  # fmt: skip
    assert printed["serve"]["mcp_url"].endswith("/mcp")  # type: ignore[index]
    assert printed["tools forget-uses"] == {"forgotten": 0}


async def serve_announcement(config: Path) -> object:
    """The JSON line ``serve --json`` prints once it listens; the process is stopped after."""
    command = [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--json"]
    async with await anyio.open_process(command, cwd=REPO) as process:
        try:
            assert process.stdout is not None
            line = b""
            with anyio.fail_after(START_SECS):
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive(1)
            return json.loads(line)
        finally:
            process.terminate()
            with anyio.fail_after(START_SECS):
                await process.wait()


async def test_serve_refuses_json_over_stdio() -> None:
    result = await run_cli("serve", "--transport", "stdio", "--json")
    assert result.exit_code == 2
    assert "--json: over --transport stdio, stdout is the MCP stream" in result.stderr


async def test_check_config_wants_exactly_one_file(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    neither = await run_cli("check-config")
    both = await run_cli("check-config", str(config), "--config", str(config))
    for result in (neither, both):
        assert result.exit_code == 2
        assert "give the file to validate, as an argument or with --config (one of them)" in result.stderr
    table = await run_cli("check-config", "--config", str(config))
    assert (table.exit_code, table.stdout.splitlines()[0]) == (0, f"{config}: OK, 1 server(s)")
