"""``mcp-aggregator registry search/add/update`` against a running gateway and a local registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_aggregator.cli.registry_commands import read_env_file
from tests.cli.conftest import run_cli
from tests.installs.gateway_with_registry import ADMIN, gateway_with_registry, npm_project
from tests.installs.local_registry import LocalRegistry, item, memory_version, npm_memory, serving, with_secrets

MEMORY = "io.github.modelcontextprotocol/server-memory"
OFFLINE_ENV = ("--env", "npm_config_offline=true")


@pytest.fixture(autouse=True)
def _wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables as wide as their names, whatever terminal (or none) runs the tests."""
    monkeypatch.setenv("COLUMNS", "200")


async def test_search_add_list_and_update_from_the_command_line(tmp_path: Path) -> None:
    local = LocalRegistry()
    local.add(item({**npm_memory(), "version": "1.0.0"}, updated=1))
    local.add(item(with_secrets(), updated=2))
    local.add(item(npm_memory("io.example/old-memory"), status="deprecated", updated=3))
    async with (
        serving(local) as served_registry,
        gateway_with_registry(served_registry.url, npm_project(tmp_path)) as gw,
    ):
        at = ["--gateway", gw.base, "--token", ADMIN]

        listed = await run_cli("registry", "search", "memory", *at)
        assert listed.exit_code == 0, listed.output
        assert MEMORY in listed.output and "DEPRECATED" in listed.output
        as_json = json.loads((await run_cli("registry", "search", "keys", "--json", *at)).stdout)
        assert [e["name"] for e in as_json] == ["io.example/memory-with-keys"]
        first = as_json[0]["inputs"][0]
        assert (first["name"], first["required"], first["secret"]) == ("WEATHER_API_KEY", True, True)

        missing = await run_cli("registry", "add", "io.example/memory-with-keys", *at)
        assert missing.exit_code == 1
        assert (
            "env WEATHER_API_KEY is required (API key); env REGION is required; "
            "give them with --env/--header/--arg K=V or --env-file PATH, "
            "or run on a terminal (without --json) to be asked"
        ) in missing.output

        unknown = await run_cli("registry", "add", "io.example/nope@2.0.0", *at)
        assert unknown.exit_code == 1
        assert "no server 'io.example/nope@2.0.0' in registry 'official'" in unknown.output

        added = await run_cli(
            "registry",
            "add",
            f"{MEMORY}@1.0.0",
            "--as",
            "notes",
            "--env",
            "npm_config_offline=true",
            *at,
        )
        assert added.exit_code == 0, added.output
        assert f"notes: CONNECTED, 9 tools ({MEMORY}@1.0.0 from official)" in added.output

        servers = await run_cli("servers", "list", *at)
        assert f"official: {MEMORY}@1.0.0" in servers.output
        shown = await run_cli("servers", "show", "notes", *at)
        assert "origin" in shown.output and f"{MEMORY}@1.0.0" in shown.output

        local.add(item({**npm_memory(), "version": "1.1.0"}, updated=9))
        updated = await run_cli("registry", "update", "notes", *at)
        assert updated.exit_code == 0, updated.output
        assert f"({MEMORY}@1.1.0 from official) (was 1.0.0)" in updated.output

        deprecated = await run_cli(
            "registry",
            "add",
            "io.example/old-memory",
            "--env",
            "npm_config_offline=true",
            *at,
        )
        assert deprecated.exit_code == 0, deprecated.output
        assert "warning: io.example/old-memory@" in deprecated.output and "is deprecated" in deprecated.output


async def test_a_server_json_file_is_checked_and_installed(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**npm_memory(), "packages": [{"registryType": "npm"}]}))
    good = tmp_path / "server.json"
    good.write_text(json.dumps(npm_memory("io.example/from-file")))
    async with gateway_with_registry("http://127.0.0.1:9", npm_project(tmp_path)) as gw:
        at = ["--gateway", gw.base, "--token", ADMIN]
        refused = await run_cli("registry", "add", "--file", str(bad), *at)
        assert refused.exit_code == 1
        assert "invalid server.json: packages[0].identifier: Field required" in refused.output
        neither = await run_cli("registry", "add", *at)
        assert neither.exit_code == 2 and "give exactly one of NAME[@VERSION] or --file" in neither.output
        missing_file = await run_cli("registry", "add", "--file", str(tmp_path / "none.json"), *at)
        assert missing_file.exit_code == 2 and "No such file" in missing_file.output
        installed = await run_cli(
            "registry",
            "add",
            "--file",
            str(good),
            "--env",
            "npm_config_offline=true",
            "--network",
            "none",
            *at,
        )
        assert installed.exit_code == 0, installed.output
        assert f"from-file: CONNECTED, 9 tools (io.example/from-file@{memory_version()} from file)" in installed.output


def test_an_env_file_gives_key_value_lines_skipping_comments_and_quotes(tmp_path: Path) -> None:
    path = tmp_path / "inputs.env"
    path.write_text("# keys\n\nAPI_KEY=sk-0123=x\nexport REGION = \"eu\"\nEMPTY=\nQUOTED='a b'\n")
    assert read_env_file(path) == {"API_KEY": "sk-0123=x", "REGION": "eu", "EMPTY": "", "QUOTED": "a b"}


async def test_a_missing_or_malformed_env_file_is_refused_naming_it_and_the_line(tmp_path: Path) -> None:
    # Refused before any gateway is asked: none answers at this address.
    at = ["--gateway", "http://127.0.0.1:9", "--token", ADMIN]
    none = await run_cli("registry", "add", MEMORY, "--env-file", str(tmp_path / "none.env"), *at)
    assert none.exit_code == 2
    assert f"--env-file {tmp_path / 'none.env'}: No such file or directory" in none.output
    bad = tmp_path / "bad.env"
    bad.write_text("GOOD=1\nsk-secret-without-a-key\n")
    refused = await run_cli("registry", "update", "notes", "--env-file", str(bad), *at)
    assert refused.exit_code == 2
    assert f"--env-file {bad}: line 2: expected KEY=VALUE" in refused.output
    assert "sk-secret-without-a-key" not in refused.output
