"""``mcp-aggregator audit`` and ``profiles`` against a running gateway."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli
from tests.conftest import stdio_fixture
from tests.serve.http_face import API, face_settings, http_face

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


async def test_audit_lists_calls_newest_first_filters_and_pages(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        cli = Cli(face)
        for text in ("one", "two", "three"):
            assert (await cli("tools", "call", "alpha.echo", "--arg", f"text={text}")).exit_code == 0
        assert (await cli("tools", "call", "alpha.fail")).exit_code == 1
        assert face.gateway.audit is not None
        await face.gateway.audit.flush()

        echoes = json.loads((await cli("audit", "--server", "alpha", "--tool", "echo", "--json")).stdout)
        assert [(i["server"], i["tool"], i["outcome"]) for i in echoes["items"]] == [("alpha", "echo", "ok")] * 3
        ids = [i["id"] for i in echoes["items"]]
        assert ids == sorted(ids, reverse=True), "newest first"

        failed = await cli("audit", "--outcome", "error")
        assert failed.exit_code == 0, failed.stderr
        assert "fail" in failed.stdout and "echo" not in failed.stdout

        first = await cli("audit", "--tool", "echo", "--limit", "2")
        assert f"older: --before {ids[1]}" in first.stdout
        older = json.loads((await cli("audit", "--tool", "echo", "--before", str(ids[1]), "--json")).stdout)
        assert [i["id"] for i in older["items"]] == ids[2:] and older["next_before"] is None


async def test_audit_finds_the_calls_of_one_http_request_by_its_id(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face, face.admin() as http:
        await face.gateway.wait_settled(30)
        for text, request_id in (("one", "req-1"), ("two", "req-2")):
            called = await http.post(
                f"{API}/tools/call",
                json={"name": "alpha.echo", "arguments": {"text": text}},
                headers={"X-Request-Id": request_id},
            )
            assert called.status_code == 200, called.text
        assert face.gateway.audit is not None
        await face.gateway.audit.flush()
        cli = Cli(face)
        found = json.loads((await cli("audit", "--request-id", "req-2", "--json")).stdout)
        assert [(i["tool"], i["request_id"]) for i in found["items"]] == [("echo", "req-2")]
        shown = await cli("audit", "--request-id", "req-1")
        assert shown.exit_code == 0, shown.stderr
        assert "req-1" in shown.stdout and "req-2" not in shown.stdout
        too_long = await cli("audit", "--request-id", "x" * 129)
        assert too_long.exit_code == 1
        assert too_long.stderr.startswith("mcp-aggregator: error: request_id: ")


async def test_a_bad_audit_filter_is_refused_naming_it(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("audit", "--outcome", "maybe")
        assert result.exit_code == 1
        assert result.stderr.startswith("mcp-aggregator: error: outcome: ")


async def test_audit_on_a_gateway_that_keeps_none_says_so(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, sections={"audit": {"enabled": False}})) as face:
        result = await Cli(face)("audit")
        assert result.exit_code == 1
        assert "the audit trail is off (audit.enabled: false)" in result.stderr


async def test_audit_refuses_a_limit_out_of_range_before_asking(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("audit", "--limit", "0")
        assert result.exit_code == 2
        assert "--limit" in result.stderr
