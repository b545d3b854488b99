"""``mcp-aggregator tools ...`` against a running gateway, and the REST call they use."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_aggregator.cli.tools_commands import parse_arguments
from mcp_aggregator.settings import ServerConfig, Transport
from tests.cli.conftest import Cli
from tests.conftest import REPO, stdio_fixture
from tests.serve.http_face import API, face_settings, http_face


async def test_tools_list_shows_every_tool_or_one_servers(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), stdio_fixture("beta"))) as face:
        await face.gateway.wait_settled(30)
        cli = Cli(face)
        every = json.loads((await cli("tools", "list", "--json")).stdout)
        assert {"alpha.echo", "beta.echo"} <= {t["name"] for t in every}
        table = await cli("tools", "list", "beta")
        assert table.exit_code == 0, table.stderr
        assert "beta.add" in table.stdout and "alpha.add" not in table.stdout
        assert "Add two integers." in table.stdout


async def test_tools_call_passes_typed_arguments_through_the_pipeline(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        cli = Cli(face)
        echoed = await cli("tools", "call", "alpha.echo", "--arg", "text=hello there")
        assert (echoed.exit_code, echoed.stdout.strip()) == (0, "hello there")
        added = await cli("tools", "call", "alpha.add", "--arg", "a=2", "--arg", "b=40", "--json")
        assert added.exit_code == 0, added.stderr
        assert json.loads(added.stdout)["structuredContent"] == {"total": 42}


async def test_a_tool_error_prints_its_text_and_exits_with_one(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        failed = await Cli(face)("tools", "call", "alpha.fail", "--arg", "message=it broke")
        assert failed.exit_code == 1
        assert "Error executing tool fail" in failed.stdout


async def test_calling_an_unknown_tool_or_bad_arguments_names_the_problem(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        cli = Cli(face)
        unknown = await cli("tools", "call", "alpha.nope")
        assert unknown.exit_code == 1 and "alpha.nope" in unknown.stderr
        bad_pair = await cli("tools", "call", "alpha.echo", "--arg", "text")
        assert bad_pair.exit_code == 2 and "--arg 'text': expected NAME=VALUE" in bad_pair.stderr
        bad_json = await cli("tools", "call", "alpha.echo", "--args-json", "[1]")
        assert bad_json.exit_code == 2 and "--args-json: must be a JSON object" in bad_json.stderr


async def test_the_rest_tools_call_endpoint_runs_the_pipeline_and_validates_its_body(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        async with face.admin() as http:
            ok = await http.post(f"{API}/tools/call", json={"name": "alpha.echo", "arguments": {"text": "hi"}})
            assert ok.status_code == 200 and ok.json()["content"][0]["text"] == "hi"
            exposed = await http.post(f"{API}/tools/call", json={"name": "alpha__echo", "arguments": {"text": "x"}})
            assert exposed.status_code == 200 and exposed.json()["content"][0]["text"] == "x"
            missing = await http.post(f"{API}/tools/call", json={"name": "alpha.nope"})
            assert missing.status_code == 404 and "alpha.nope" in missing.json()["detail"]
            empty = await http.post(f"{API}/tools/call", json={"name": "", "arguments": {}})
            assert empty.status_code == 422
            assert empty.json()["detail"][0]["msg"].startswith("name: String should have at least 1 character")
            extra = await http.post(f"{API}/tools/call", json={"name": "alpha.echo", "argument": {}})
            assert extra.status_code == 422 and extra.json()["detail"][0]["msg"].startswith("argument: Extra inputs")


async def test_tools_search_ranks_the_running_gateways_tools(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        await face.gateway.wait_until(face.gateway.index_ready, timeout_secs=30)
        result = await Cli(face)("tools", "search", "add two integers", "-k", "3", "--json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)[0]["name"] == "alpha.add"


async def test_tools_approve_trusts_a_held_tool_and_reports_an_empty_approval(tmp_path: Path) -> None:
    rug = ServerConfig(
        name="rug", transport=Transport.STDIO, command=sys.executable,
        args=("-m", "tests.upstream.rug_pull_server"), cwd=str(REPO),
    )  # fmt: skip
    async with http_face(face_settings(tmp_path, rug)) as face:
        gateway = face.gateway
        await gateway.wait_settled(30)
        cli = Cli(face)
        assert (await cli("tools", "approve", "rug")).stdout.strip() == "nothing was held"
        rewritten = await cli("tools", "call", "rug.rewrite", "--arg", "description=Changed.")
        assert rewritten.exit_code == 0, rewritten.stderr
        await gateway.wait_until(lambda: gateway.catalog.get("rug.weather") is None, timeout_secs=30)
        held = await cli("tools", "call", "rug.weather", "--arg", "city=Oslo")
        assert held.exit_code == 1 and "its definition changed since it was approved" in held.stderr
        approved = await cli("tools", "approve", "rug", "weather")
        assert (approved.exit_code, approved.stdout.strip()) == (0, "approved: weather")


@pytest.mark.parametrize(
    ("pairs", "args_json", "expected"),
    [
        (["n=3", "flag=true", "s=hello"], None, {"n": 3, "flag": True, "s": "hello"}),
        (['obj={"a": 1}', 'quoted="3"'], None, {"obj": {"a": 1}, "quoted": "3"}),
        (["a=2"], '{"a": 1, "b": 2}', {"a": 2, "b": 2}),
        (["eq=x=y"], None, {"eq": "x=y"}),
    ],
)
def test_arguments_are_json_when_they_parse_and_strings_otherwise(
    pairs: list[str], args_json: str | None, expected: dict[str, object]
) -> None:
    assert parse_arguments(pairs, args_json) == expected
