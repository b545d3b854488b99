"""Secret canaries (env, headers, args, ${VAR} values, URL tokens) appear in no API answer, log line
or MCP response, while the gateway really holds and uses them."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mcp_aggregator.credentials import UpstreamOAuth
from mcp_aggregator.settings import ServerConfig, Transport
from tests.admin.conftest import served_app
from tests.conftest import REPO
from tests.serve.http_face import API, face_settings, http_face
from tests.upstream.oauth_servers import browser_sign_in, oauth_world

ENV_CANARY = "canary-env-5f1e9a7c31d4"
EXPANDED_CANARY = "canary-expanded-0b9e8d7c"
ARG_CANARY = "canary-arg-8b2d4c6e90aa"
FLAG_CANARY = "canary-flag-value-71a2b3"
HEADER_CANARY = "canary-header-3c4d5e6f7a"
LITERAL_HEADER_CANARY = "canary-literal-header-9e8f"
URL_CANARY = "canaryurl0123456789abcdef"
CANARIES = (ENV_CANARY, EXPANDED_CANARY, ARG_CANARY, FLAG_CANARY, HEADER_CANARY, LITERAL_HEADER_CANARY, URL_CANARY)


def rug_with_secrets() -> ServerConfig:
    return ServerConfig(
        name="rug",
        transport=Transport.STDIO,
        command=sys.executable,
        args=("-m", "tests.upstream.rug_pull_server", "--token", ARG_CANARY, f"--key={FLAG_CANARY}"),
        env={"RUG_SECRET": "${CANARY_EXPANDED}", "LITERAL": ENV_CANARY},
        cwd=str(REPO),
    )


async def not_found(_request: Request) -> PlainTextResponse:
    return PlainTextResponse("no such hook", status_code=404)


async def test_secret_canaries_leave_through_no_answer_log_line_or_mcp_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("CANARY_EXPANDED", EXPANDED_CANARY)
    monkeypatch.setenv("CANARY_HEADER", HEADER_CANARY)
    texts: list[str] = []
    elsewhere = Starlette(routes=[Route("/{path:path}", not_found, methods=["GET", "POST", "DELETE"])])
    async with served_app(elsewhere) as other, http_face(face_settings(tmp_path, rug_with_secrets())) as face:
        gateway = face.gateway
        web = {
            "name": "web",
            "transport_type": "HTTP",
            "connection_config": {
                "base_url": f"{other}/hooks/{URL_CANARY}/mcp",
                "headers": {"Authorization": "Bearer ${CANARY_HEADER}", "X-Literal": LITERAL_HEADER_CANARY},
            },
            "auto_connect": True,
        }
        async with face.admin() as http:
            answers: list[httpx.Response] = [await http.post(f"{API}/servers", json=web)]
            await gateway.wait_settled(30)
            servers = (await http.get(f"{API}/servers")).json()
            ids = {s["name"]: s["id"] for s in servers}
            for path in [f"{API}/servers", f"{API}/servers?include_tools=true", f"{API}/state", "/metrics"]:
                answers.append(await http.get(path))
            for server_id in ids.values():
                answers.append(await http.get(f"{API}/servers/{server_id}"))
                answers.append(await http.get(f"{API}/servers/{server_id}/tools"))
            leaked = await http.post(f"{API}/servers/{ids['rug']}/tools/leak/call", json={})
            assert leaked.status_code == 502 and "backend refused key ***" in leaked.text
            answers.append(leaked)
            answers.append(await http.post(f"{API}/servers/{ids['web']}/tools/x/call", json={}))
        texts += [answer.text for answer in answers]
        async with Client(face.mcp_url, cache=None) as client:
            texts.append((await client.list_tools()).model_dump_json())
            texts.append((await client.call_tool("rug__weather", {"city": "Oslo"})).model_dump_json())
            for name in ("rug__leak", "web__x"):
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(name, {})
                texts.append(refused.value.error.model_dump_json())
            assert "backend refused key ***" in texts[-2]
            texts.append((await client.list_resources()).model_dump_json())
        # The canaries are real: stored in the registry and handed to the upstream.
        stored = await gateway.registry.get_server(ids["rug"])
        assert ARG_CANARY in stored.connection_config["args"]
        assert stored.connection_config["env"]["LITERAL"] == ENV_CANARY
    logged = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    assert logged, "the run logged something"
    for canary in CANARIES:
        assert not [t for t in texts if canary in t], canary
        assert not [line for line in logged if canary in line], canary


async def test_upstream_oauth_tokens_leave_through_no_answer_log_line_mcp_response_or_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    async with oauth_world() as world:
        config = ServerConfig(name="protected", transport=Transport.HTTP, base_url=world.mcp_url, auth=UpstreamOAuth())
        async with http_face(face_settings(tmp_path / "data", config)) as face:
            await face.gateway.wait_settled(30)
            async with face.admin() as http:
                sid = (await http.get(f"{API}/servers")).json()[0]["id"]
                start = await http.post(f"{API}/servers/{sid}/oauth/start")
                page = await browser_sign_in(start.json()["authorization_url"])
                texts += [start.text, page.text]
                world.provider.expire_access_tokens()  # the next call refreshes (rotating the refresh token)
                async with Client(face.mcp_url, cache=None) as client:
                    texts.append((await client.list_tools()).model_dump_json())
                    texts.append((await client.call_tool("protected__echo", {"text": "hi"})).model_dump_json())
                    world.provider.expire_access_tokens()
                    world.provider.revoke_refresh_tokens()
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool("protected__echo", {"text": "again"})
                    texts.append(refused.value.error.model_dump_json())
                for path in [f"{API}/servers", f"{API}/servers/{sid}", f"{API}/servers/{sid}/tools", "/metrics"]:
                    texts.append((await http.get(path)).text)
        # Every token the authorization server ever issued, and the client secret it minted.
        secrets_issued = [*world.provider.issued_tokens, *(c.client_secret for c in world.provider.clients.values())]
    secrets_issued = [s for s in secrets_issued if s]
    assert len(secrets_issued) >= 6
    logged = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    files = [p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file()]
    database = Path(face.gateway.settings.registry.database_url.split("///", 1)[1])
    registry_files = [p.read_bytes() for p in database.parent.glob(database.name + "*")]
    assert any(b"gAAAAA" in f for f in registry_files), "the tokens are stored, sealed (Fernet)"
    files += registry_files
    for secret in secrets_issued:
        assert not [t for t in texts if secret in t]
        assert not [line for line in logged if secret in line]
        assert not [f for f in files if secret.encode() in f]
