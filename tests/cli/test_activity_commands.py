"""``mcp-aggregator audit`` and ``profiles`` against a running gateway."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Cli
from tests.serve.http_face import face_settings, http_face


async def test_audit_and_profiles_name_the_endpoint_a_gateway_without_them_lacks(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        audit = await cli("audit", "--tool", "alpha.echo", "--limit", "5")
        assert audit.exit_code == 1
        assert f"the gateway at {face.base_url} has no GET /api/v1/aggregator/audit" in audit.stderr
        profiles = await cli("profiles")
        assert profiles.exit_code == 1
        assert "has no GET /api/v1/aggregator/profiles" in profiles.stderr


async def test_audit_refuses_a_limit_out_of_range_before_asking(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("audit", "--limit", "0")
        assert result.exit_code == 2
        assert "--limit" in result.stderr
