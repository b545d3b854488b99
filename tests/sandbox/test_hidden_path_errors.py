"""Servers nobody wrote for the gateway, given a path their sandbox hides: the error names the
path and the line to add, the status shows their stderr, and with the line they connect."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from mcp_aggregator.sandbox import SandboxConfig
from tests.cli.conftest import Cli, run_cli
from tests.conftest import NODE_BIN, pypi_server
from tests.serve.http_face import API, face_settings, http_face

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
SETTLE_SECS = 30.0

SCRIPT = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("notes")


    @app.tool()
    def hello(name: str) -> str:
        return f"hello {name}"


    app.run()
    """
)


async def git_repo(folder: Path) -> Path:
    await anyio.run_process(["git", "init", "-q", str(folder)])
    return folder


def one_hint(detail: dict[str, Any]) -> dict[str, Any]:
    hints = detail["sandbox_hints"]
    assert len(hints) == 1, hints
    return hints[0]  # type: ignore[no-any-return]


def grant_of(hint: dict[str, Any]) -> SandboxConfig:
    """The proposed line, read as an operator would paste it into the entry."""
    return SandboxConfig.model_validate(yaml.safe_load(hint["grant"])["sandbox"])


async def test_a_pypi_and_an_npm_server_name_the_hidden_path_through_the_cli_and_connect_with_its_grant(
    tmp_path: Path,
) -> None:
    repo = await git_repo(tmp_path / "repo")
    shared = tmp_path / "shared"
    shared.mkdir()
    git = pypi_server("vcs", "mcp-server-git").command
    assert git is not None
    files = str(NODE_BIN / "mcp-server-filesystem")
    async with http_face(face_settings(tmp_path / "data")) as face:
        cli = Cli(face)
        failed = await cli(
            "servers", "add", "vcs", "--command", git, "--arg=--repository", f"--arg={repo}", "--network", "none"
        )
        assert failed.exit_code == 1
        assert f"sandbox: {{read: [{repo}]}}" in failed.stderr
        assert "args[1]" in failed.stderr and "its stderr ended with" in failed.stderr

        shown = json.loads((await cli("servers", "show", "vcs", "--json")).stdout)
        assert shown["status"] == "ERROR"
        assert shown["connection_config"]["args"] == ["--repository", str(repo)], "a path is not a secret"
        assert any(str(repo) in line for line in shown["stderr_tail"]), shown["stderr_tail"]
        git_hint = one_hint(shown)
        assert git_hint == {
            "path": str(repo),
            "access": "read",
            "given_as": "args[1]",
            "grant": f"sandbox: {{read: [{repo}]}}",
        }
        assert git_hint["grant"] in shown["error_message"] and git_hint["grant"] in shown["last_error"]
        table = (await cli("servers", "show", "vcs")).stdout
        assert "sandbox.hidden" in table and "stderr" in table
        listed = (await cli("servers", "list")).stdout
        assert "vcs" in listed and "ERROR" in listed

        failed = await cli("servers", "add", "files", "--command", files, f"--arg={shared}", "--network", "none")
        assert failed.exit_code == 1
        files_hint = one_hint(json.loads((await cli("servers", "show", "files", "--json")).stdout))
        assert (files_hint["path"], files_hint["given_as"]) == (str(shared), "args[0]")

        for name, command, args, hint in (
            ("vcs", git, ["--repository", str(repo)], git_hint),
            ("files", files, [str(shared)], files_hint),
        ):
            assert (await cli("servers", "remove", name)).exit_code == 0
            granted = grant_of(hint)
            flags = [f"--read={path}" for path in granted.read] + [f"--write={path}" for path in granted.write]
            added = await cli(
                "servers", "add", name, "--command", command, *[f"--arg={a}" for a in args], *flags, "--network", "none"
            )
            assert added.exit_code == 0, added.stderr
            assert f"{name}: CONNECTED" in added.stdout


async def test_a_script_run_by_a_venvs_python_names_the_hidden_script_through_rest_and_connects_with_its_grant(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = project / "server.py"
    script.write_text(SCRIPT)
    entry: dict[str, Any] = {
        "name": "notes",
        "transport_type": "STDIO",
        "connection_config": {"command": sys.executable, "args": [str(script)], "sandbox": {"network": "none"}},
        "auto_connect": True,
    }
    async with http_face(face_settings(tmp_path / "data")) as face, face.admin() as admin:
        created = await admin.post(f"{API}/servers", json=entry)
        assert created.status_code == 201, created.text
        await face.gateway.wait_settled(SETTLE_SECS)
        detail = (await admin.get(f"{API}/servers/{created.json()['id']}")).json()
        assert detail["status"] == "ERROR"
        assert any("can't open file" in line for line in detail["stderr_tail"]), detail["stderr_tail"]
        hint = one_hint(detail)
        assert (hint["path"], hint["access"], hint["given_as"]) == (str(script), "read", "args[0]")
        assert f"{script} (args[0]) is not visible in its sandbox" in detail["error_message"]
        listed = (await admin.get(f"{API}/servers")).json()
        assert listed[0]["stderr_tail"] == detail["stderr_tail"]

        assert (await admin.delete(f"{API}/servers/{created.json()['id']}")).status_code in (200, 204)
        entry["connection_config"]["sandbox"] |= grant_of(hint).model_dump(include={"read"})
        again = await admin.post(f"{API}/servers", json=entry)
        assert again.status_code == 201, again.text
        await face.gateway.wait_settled(SETTLE_SECS)
        detail = (await admin.get(f"{API}/servers/{again.json()['id']}")).json()
        assert detail["status"] == "CONNECTED", detail["error_message"]
        assert detail["stderr_tail"] == [] and detail["sandbox_hints"] == []


async def test_check_config_warns_of_a_hidden_path_and_a_missing_grant_before_any_start(tmp_path: Path) -> None:
    repo = await git_repo(tmp_path / "repo")
    git = pypi_server("vcs", "mcp-server-git").command
    entries = [
        {"name": "vcs", "transport": "stdio", "command": git, "args": ["--repository", str(repo)]},
        {"name": "seen", "transport": "stdio", "command": git, "args": [str(repo)], "sandbox": {"read": [str(repo)]}},
        {"name": "typo", "transport": "stdio", "command": git, "sandbox": {"write": [str(tmp_path / "nope")]}},
    ]
    config = tmp_path / "aggregator.yaml"
    config.write_text(yaml.safe_dump({"servers": entries, "serve": {"data_dir": str(tmp_path / "data")}}))

    checked = await run_cli("check-config", str(config), "--json")

    assert checked.exit_code == 0, checked.stderr
    hidden = "exists but its sandbox would not show it"
    assert json.loads(checked.stdout)["warnings"] == [
        f"vcs: {repo} (args[1]) {hidden}: add `sandbox: {{read: [{repo}]}}` to its entry",
        f"typo: sandbox.write[0]: '{tmp_path / 'nope'}' does not exist",
    ]
    assert "warning: vcs:" in (await run_cli("check-config", str(config))).stdout
