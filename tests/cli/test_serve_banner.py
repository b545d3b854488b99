"""The banner ``mcp-aggregator serve`` prints names the MCP Inspector as the README does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mcp_aggregator.cli.serve_command import TransportChoice, _announce
from tests.conftest import REPO

URL = "http://127.0.0.1:8765/mcp"


def test_the_banners_inspector_command_is_the_readmes(capsys: pytest.CaptureFixture[str]) -> None:
    gateway = SimpleNamespace(supervisors={})
    _announce(None, TransportChoice.HTTP)(gateway, URL, "http://127.0.0.1:8765/#token=t")  # type: ignore[arg-type]
    [line] = [line for line in capsys.readouterr().err.splitlines() if "MCP Inspector:" in line]
    command = line.split("MCP Inspector:", 1)[1].strip()
    assert command.startswith("npx -y @modelcontextprotocol/inspector@")
    assert command in (REPO / "README.md").read_text().splitlines()
