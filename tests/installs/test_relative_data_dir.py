"""A registry install on the default data dir (``.aggregator``, relative to where the gateway
was started), as a user runs it: the server's private folder is granted by its absolute path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_aggregator.settings.serve_settings import ServeSettings
from tests.cli.conftest import Cli
from tests.conftest import settings_for
from tests.installs.gateway_with_registry import NPM_PACKAGES, npm_project
from tests.installs.local_registry import memory_version, npm_memory
from tests.serve.http_face import http_face


async def test_registry_add_works_from_a_folder_with_the_default_relative_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    npm_project(tmp_path)
    entry = tmp_path / "server.json"
    entry.write_text(json.dumps(npm_memory("io.example/notes")))
    default = ServeSettings.model_fields["data_dir"].default
    assert not default.is_absolute()
    monkeypatch.chdir(tmp_path)  # the folder the user started the gateway from
    settings = settings_for(
        port=0,
        # What npx finds offline, granted as a user grants what a server needs.
        sandbox={"read": [str(tmp_path / "node_modules"), str(NPM_PACKAGES)]},
    )
    settings = settings.model_copy(update={"serve": settings.serve.model_copy(update={"data_dir": default})})
    async with http_face(settings) as face:
        cli = Cli(face)
        added = await cli("registry", "add", "--file", str(entry), "--as", "notes", "--env", "npm_config_offline=true")
        assert added.exit_code == 0, added.output
        assert f"notes: CONNECTED, 9 tools (io.example/notes@{memory_version()} from file)" in added.output

        shown = json.loads((await cli("servers", "show", "notes", "--json")).stdout)
        private = tmp_path / default / "servers" / "notes"
        assert private.is_dir()
        assert shown["sandbox"]["write"] == [str(private)]
        assert shown["connection_config"]["cwd"] == str(private)
