"""``mcp-aggregator audit`` and ``profiles`` against a running gateway."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli
from tests.conftest import stdio_fixture
from tests.serve.http_face import face_settings, http_face

BOT_TOKEN = "bot-token-0123456789abcdef"
PROFILES = {
    "profiles": [{"name": "timekeeper", "servers": ["alpha"]}],
    "clients": [{"name": "bot", "token": BOT_TOKEN, "profiles": ["timekeeper"]}],
}


async def test_profiles_lists_each_profile_and_the_clients_that_reach_it(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), sections=PROFILES)) as face:
        cli = Cli(face)
        shown = await cli("profiles")
        assert shown.exit_code == 0, shown.stderr
        assert "/mcp/timekeeper" in shown.stdout and "bot" in shown.stdout
        assert BOT_TOKEN not in shown.stdout
        answer = json.loads((await cli("profiles", "--json")).stdout)
        assert [(c["name"], c["profiles"]) for c in answer["clients"]] == [("bot", ["timekeeper"])]
        timekeeper = next(p for p in answer["profiles"] if p["name"] == "timekeeper")
        assert (timekeeper["servers"], timekeeper["endpoint"]) == (["alpha"], "/mcp/timekeeper")


async def test_audit_names_the_endpoint_a_gateway_without_it_lacks(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        audit = await Cli(face)("audit", "--tool", "alpha.echo", "--limit", "5")
        assert audit.exit_code == 1
        assert f"the gateway at {face.base_url} has no GET /api/v1/aggregator/audit" in audit.stderr


async def test_audit_refuses_a_limit_out_of_range_before_asking(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("audit", "--limit", "0")
        assert result.exit_code == 2
        assert "--limit" in result.stderr
