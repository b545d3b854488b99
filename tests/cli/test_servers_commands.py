"""``mcp-aggregator servers ...`` against a running gateway."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from tests.cli.conftest import Cli, run_cli
from tests.conftest import REPO, HttpUpstream, stdio_fixture
from tests.serve.http_face import face_settings, http_face

FIXTURE = [sys.executable, "-m", "tests.upstream.fixture_server", "stdio", "--name"]


def fixture_args(name: str) -> list[str]:
    return ["--command", FIXTURE[0], *[f"--arg={a}" for a in FIXTURE[1:]], f"--arg={name}", "--cwd", str(REPO)]


async def test_servers_add_returns_once_connected_and_list_show_and_remove_see_it(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        added = await cli("servers", "add", "beta", *fixture_args("beta"), "--description", "Second fixture")
        assert added.exit_code == 0, added.stderr
        assert "beta: CONNECTED" in added.stdout

        listed = await cli("servers", "list", "--json")
        assert [(s["name"], s["status"]) for s in json.loads(listed.stdout)] == [("beta", "CONNECTED")]
        table = await cli("servers", "list")
        assert "beta" in table.stdout and "CONNECTED" in table.stdout and "STDIO" in table.stdout

        shown = await cli("servers", "show", "beta")
        assert shown.exit_code == 0, shown.stderr
        assert "Second fixture" in shown.stdout and "beta.echo" in shown.stdout
        detail = json.loads((await cli("servers", "show", "beta", "--json")).stdout)
        assert detail["description"] == "Second fixture"
        assert {t["original_name"] for t in detail["tools"]} >= {"echo", "add"}

        removed = await cli("servers", "remove", "beta")
        assert (removed.exit_code, removed.stdout.strip()) == (0, "removed beta")
        assert json.loads((await cli("servers", "list", "--json")).stdout) == []


async def test_disconnect_and_connect_wait_for_the_new_status(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        cli = Cli(face)
        await face.gateway.wait_settled(30)
        gone = await cli("servers", "disconnect", "alpha", "--force")
        assert gone.exit_code == 0, gone.stderr
        assert gone.stdout.startswith("alpha: DISCONNECTED")
        back = await cli("servers", "connect", "alpha", "--json")
        assert back.exit_code == 0, back.stderr
        assert json.loads(back.stdout)["status"] == "CONNECTED"


async def test_an_invalid_name_is_refused_with_the_apis_message_naming_the_field(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("servers", "add", "Bad Name", "--http", "http://127.0.0.1:9/mcp")
        assert result.exit_code == 1
        assert "name: must match ^[a-z][a-z0-9_-]*$" in result.stderr


async def test_a_server_that_cannot_start_is_reported_with_its_error(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        result = await Cli(face)("servers", "add", "ghost", "--command", str(tmp_path / "no-such-program"))
        assert result.exit_code == 1
        assert "ghost did not connect: ERROR:" in result.stderr


async def test_transport_options_must_be_exactly_one_and_pairs_need_an_equals_sign(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        both = await cli("servers", "add", "x", "--command", "true", "--http", "http://127.0.0.1:9/mcp")
        assert both.exit_code == 2
        assert "give exactly one of --command, --http, --sse, --openapi, --a2a (got --command, --http)" in both.stderr
        none = await cli("servers", "add", "x")
        assert none.exit_code == 2 and "give exactly one of --command, --http, --sse, --openapi, --a2a" in none.stderr
        stray = await cli("servers", "add", "x", "--http", "http://127.0.0.1:9/mcp", "--operation", "getPetById")
        assert stray.exit_code == 2 and "--base-url and --operation apply to --openapi only" in stray.stderr
        bad_env = await cli("servers", "add", "x", "--command", "true", "--env", "NOVALUE")
        assert bad_env.exit_code == 2 and "--env 'NOVALUE': expected KEY=VALUE" in bad_env.stderr
        header = await cli("servers", "add", "x", "--sse", "http://127.0.0.1:9/sse", "--header", "Bad Name=v")
        assert header.exit_code == 1
        assert "connection_config.headers: header name 'Bad Name' is not a valid HTTP header name" in header.stderr


async def test_an_unknown_server_is_named_in_the_error(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        for command in (["show", "nope"], ["remove", "nope"], ["connect", "nope"], ["disconnect", "nope"]):
            result = await Cli(face)("servers", *command)
            assert result.exit_code == 1, command
            assert f"no server named 'nope' on {face.base_url}" in result.stderr


async def test_the_gateway_and_token_come_from_the_configuration_file(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        config = tmp_path / "aggregator.yaml"
        config.write_text(yaml.safe_dump({"serve": {"port": face.port, "data_dir": str(tmp_path)}}))
        result = await run_cli("servers", "list", "--config", str(config), "--json")
        assert result.exit_code == 0, result.stderr
        assert [s["name"] for s in json.loads(result.stdout)] == ["alpha"]
        by_env = await run_cli("servers", "list", "--gateway", face.base_url, env={"MCP_AGGREGATOR_TOKEN": "x" * 20})
        assert by_env.exit_code == 1
        assert "refused the admin token (401)" in by_env.stderr


async def test_login_on_a_server_without_auth_says_there_is_nothing_to_sign_in_to(tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        result = await Cli(face)("servers", "login", "alpha", "--no-browser")
        assert result.exit_code == 1
        assert "Server alpha has no auth: oauth; there is nothing to sign in to" in result.stderr


async def test_http_and_sse_servers_are_added_with_their_headers(
    tmp_path: Path, http_upstream: HttpUpstream, sse_upstream: HttpUpstream
) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        web = await cli("servers", "add", "web", "--http", http_upstream.mcp_url, "--header", "X-Team=tools")
        assert (web.exit_code, web.stdout.strip().split(",")[0]) == (0, "web: CONNECTED"), web.stderr
        events = await cli("servers", "add", "events", "--sse", sse_upstream.sse_url, "--json")
        assert events.exit_code == 0, events.stderr
        assert json.loads(events.stdout)["transport_type"] == "SSE"
        shown = json.loads((await cli("servers", "show", "web", "--json")).stdout)
        assert shown["connection_config"]["headers"] == {"X-Team": "***"}, "header values are redacted"


async def test_servers_add_openapi_registers_the_documents_selected_operations(tmp_path: Path) -> None:
    petstore = REPO / "tests" / "bridges" / "fixtures" / "petstore-openapi.yaml"
    async with http_face(face_settings(tmp_path)) as face:
        cli = Cli(face)
        added = await cli(
            "servers", "add", "pets", "--openapi", str(petstore), "--base-url", "http://127.0.0.1:9/api/v3",
            "--operation", "getPetById", "--operation", "GET /store/inventory",
            "--security", "api_key=literal-key-42", "--json",
        )  # fmt: skip
        assert added.exit_code == 0, added.stderr
        stray = await cli("servers", "add", "x", "--http", "http://127.0.0.1:9/mcp", "--security", "a=b")
        assert stray.exit_code == 2 and "--security applies to --openapi and --a2a only" in stray.stderr
        detail = json.loads((await cli("servers", "show", "pets", "--json")).stdout)
        assert detail["transport_type"] == "OPENAPI"
        assert {t["original_name"] for t in detail["tools"]} == {"getPetById", "getInventory"}
        assert detail["connection_config"]["operations"] == ["getPetById", "GET /store/inventory"]
        assert detail["connection_config"]["security"] == {"api_key": "***"}
