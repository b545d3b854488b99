"""``servers add`` takes a stdio server's grants and network; ``servers show`` shows them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import Cli
from tests.cli.test_servers_commands import fixture_args
from tests.serve.http_face import face_settings, http_face

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@pytest.fixture(autouse=True)
def _wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables as wide as the paths they show, whatever terminal (or none) runs the tests."""
    monkeypatch.setenv("COLUMNS", "200")


async def test_servers_add_takes_grants_and_servers_show_shows_the_sandbox(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        added = await cli("servers", "add", "boxed", *fixture_args("boxed"), "--write", str(notes), "--network", "none")
        assert added.exit_code == 0, added.stderr
        shown = await cli("servers", "show", "boxed")
        assert shown.exit_code == 0, shown.stderr
        for line in ("sandbox", "on", f"sandbox.write  {notes}", "sandbox.network  none", "memory_mb 2048"):
            assert " ".join(line.split()) in " ".join(shown.stdout.split())


async def test_sandbox_flags_are_refused_for_http_servers_and_a_bad_network_names_the_field(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        remote = await cli("servers", "add", "x", "--http", "http://127.0.0.1:9/mcp", "--read", "/srv")
        assert remote.exit_code == 2
        assert "--read, --write, --network and --no-sandbox apply to --command only" in remote.stderr
        bad = await cli("servers", "add", "x", *fixture_args("x"), "--network", "lan")
        assert bad.exit_code != 0
        assert "sandbox.network" in bad.stderr and "must be outbound, none, host" in bad.stderr
