"""The CLI and an OAuth-protected upstream (the login itself: ``tests/credentials/test_sign_in_flow.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.settings import ServerConfig, Transport
from tests.cli.conftest import Cli
from tests.serve.http_face import face_settings, http_face

oauth_servers = pytest.importorskip("tests.upstream.oauth_servers", reason="upstream sign-in is not in this build")


def protected(mcp_url: str) -> ServerConfig:
    return ServerConfig.model_validate(
        {"name": "protected", "transport": Transport.HTTP, "base_url": mcp_url, "auth": "oauth"}
    )


async def test_connecting_a_server_that_wants_a_sign_in_says_to_log_in(tmp_path: Path) -> None:
    async with (
        oauth_servers.oauth_world() as world,
        http_face(face_settings(tmp_path, protected(world.mcp_url))) as face,
    ):
        await face.gateway.wait_settled(30)
        parked = await Cli(face)("servers", "connect", "protected", "--wait", "5")
        assert parked.exit_code == 1
        assert "protected wants a sign-in: run `mcp-aggregator servers login protected`" in parked.stderr
