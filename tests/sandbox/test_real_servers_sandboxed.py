"""Real servers nobody here wrote work in their sandbox, with grants that fit them."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.sandbox import SandboxConfig
from tests.conftest import REPO, npm_server, pypi_server, running_gateway, settings_for

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def text_of(result: object) -> str:
    return "\n".join(block.text for block in result.content)  # type: ignore[attr-defined]


async def test_npm_memory_and_filesystem_servers_see_only_their_grants(tmp_path: Path) -> None:
    notes, shared, secret = tmp_path / "notes", tmp_path / "shared", tmp_path / "secret"
    for folder in (notes, shared, secret):
        folder.mkdir()
    (shared / "hello.txt").write_text("hello from the grant")
    (secret / "key.txt").write_text("not for you")
    memory = npm_server(
        "memory",
        "mcp-server-memory",
        env={"MEMORY_FILE_PATH": str(notes / "memory.jsonl")},
        sandbox=SandboxConfig(write=(str(notes),), network="none"),
    )
    files = npm_server(
        "files",
        "mcp-server-filesystem",
        str(shared),
        str(secret),
        sandbox=SandboxConfig(write=(str(shared),), network="none"),
    )
    async with running_gateway(settings_for(memory, files)) as (gateway, _client):
        entity = {"name": "gateway", "entityType": "software", "observations": ["sandboxed"]}
        await gateway.call_tool("memory.create_entities", {"entities": [entity]})
        assert "sandboxed" in (notes / "memory.jsonl").read_text()
        assert "hello from the grant" in text_of(
            await gateway.call_tool("files.read_text_file", {"path": str(shared / "hello.txt")})
        )
        # The server was told of `secret` too, but its sandbox does not show it.
        denied = await gateway.call_tool("files.read_text_file", {"path": str(secret / "key.txt")})
        assert "not for you" not in text_of(denied)


async def test_pypi_time_and_git_servers_work_sandboxed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    (repo / "file.txt").write_text("tracked")
    await anyio.run_process(["git", "-C", str(repo), "add", "file.txt"])
    time_server = pypi_server("clock", "mcp-server-time", "--local-timezone", "UTC").model_copy(
        update={"sandbox": SandboxConfig(network="none")}
    )
    git_server = pypi_server("git", "mcp-server-git", "--repository", str(repo)).model_copy(
        update={"sandbox": SandboxConfig(read=(str(repo),), network="none"), "cwd": str(REPO)}
    )
    async with running_gateway(settings_for(time_server, git_server)) as (gateway, _client):
        now = text_of(await gateway.call_tool("clock.get_current_time", {"timezone": "UTC"}))
        assert "UTC" in now
        status = text_of(await gateway.call_tool("git.git_status", {"repo_path": str(repo)}))
        assert "file.txt" in status
