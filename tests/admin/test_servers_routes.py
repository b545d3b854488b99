"""The servers resource over real HTTP, on SQLite and PostgreSQL, with real stdio upstreams."""

from __future__ import annotations

from typing import Any

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health import ServerStatus
from tests.admin.conftest import (
    API,
    admin_settings,
    http_body,
    http_server,
    serve_admin,
    stdio_body,
    wait_for_status,
)
from tests.registry.conftest import Database

UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"


def live_tool_count(gateway: Gateway, name: str) -> int:
    connection = gateway.supervisors[name].connection
    assert connection is not None
    return len(connection.tools)


async def test_registered_server_connects_and_is_listed_with_its_tools_and_secrets_redacted(
    database: Database,
) -> None:
    async with serve_admin(admin_settings(database)) as admin:
        body = stdio_body("alpha", env={"API_KEY": "s3cret"})
        created = await admin.http.post(f"{API}/servers", json=body)
        assert created.status_code == 201
        server = created.json()
        assert server["name"] == "alpha"
        assert server["transport_type"] == "STDIO"
        assert server["status"] == "CONNECTING"
        assert server["tool_count"] == 0
        assert server["registered_at"]
        await admin.settle()

        listed = (await admin.http.get(f"{API}/servers")).json()
        upstream_tools = live_tool_count(admin.gateway, "alpha")
        assert [(s["name"], s["status"], s["tool_count"]) for s in listed] == [("alpha", "CONNECTED", upstream_tools)]
        assert listed[0]["tools"] is None
        assert "last_health_check" in listed[0]

        detail = await admin.http.get(f"{API}/servers/{server['id']}")
        assert detail.status_code == 200
        config = detail.json()["connection_config"]
        assert config["env"] == {"API_KEY": "***"}
        assert "s3cret" not in detail.text
        assert detail.json()["connected_at"] is not None

        tools = (await admin.http.get(f"{API}/servers/{server['id']}/tools")).json()
        echo = next(t for t in tools if t["original_name"] == "echo")
        assert echo["name"] == "alpha.echo"
        assert echo["skill_ids"] == [] and echo["primary_skill_id"] is None
        assert echo["is_classified"] is False

        with_tools = (await admin.http.get(f"{API}/servers", params={"include_tools": "true"})).json()
        assert {t["name"] for t in with_tools[0]["tools"]} == {t["name"] for t in tools}


async def test_status_filter_lists_only_servers_in_that_live_status(database: Database, upstream_url: str) -> None:
    alpha, beta = http_server("alpha", upstream_url), http_server("beta", upstream_url, enabled=False)
    settings = admin_settings(database, alpha, beta)
    async with serve_admin(settings) as admin:
        await admin.settle()
        names = {}
        for status in ("CONNECTED", "DISCONNECTED", "ERROR"):
            answer = await admin.http.get(f"{API}/servers", params={"status": status})
            names[status] = [s["name"] for s in answer.json()]
        assert names == {"CONNECTED": ["alpha"], "DISCONNECTED": ["beta"], "ERROR": []}
        assert (await admin.http.get(f"{API}/servers", params={"status": "ASLEEP"})).status_code == 422


async def test_connect_disconnect_and_a_call_to_a_disconnected_server_through_the_api(
    database: Database, upstream_url: str
) -> None:
    async with serve_admin(admin_settings(database, http_server("alpha", upstream_url))) as admin:
        await admin.settle()
        server_id = await admin.server_id("alpha")
        servers = f"{API}/servers/{server_id}"

        again = await admin.http.post(f"{servers}/connect")
        assert (again.status_code, again.json()) == (
            200,
            {"status": "CONNECTED", "message": "Already connected"},
        )

        called = await admin.http.post(f"{servers}/tools/echo/call", json={"arguments": {"text": "hi"}})
        assert called.status_code == 200
        assert called.json()["content"][0]["text"] == "hi"

        gone = await admin.http.post(f"{servers}/disconnect", json={"force": False})
        assert (gone.status_code, gone.json()) == (200, {"status": "DISCONNECTED", "pending_requests": 0})
        refused = await admin.http.post(f"{servers}/disconnect")
        assert refused.status_code == 409
        assert "DISCONNECTED" in refused.json()["detail"]

        unavailable = await admin.http.post(f"{servers}/tools/echo/call", json={"arguments": {"text": "hi"}})
        assert unavailable.status_code == 503
        assert unavailable.json()["detail"]["server"] == "alpha"
        assert unavailable.json()["detail"]["status"] == "DISCONNECTED"
        kept = await admin.http.get(f"{servers}/tools")
        assert "echo" in {t["original_name"] for t in kept.json()}, "tools stay while disconnected (BR-007)"

        started = await admin.http.post(f"{servers}/connect")
        assert started.status_code == 200
        assert started.json() == {"status": "CONNECTING", "message": "Connection initiated"}
        await wait_for_status(admin.gateway, "alpha", ServerStatus.CONNECTED)
        forced = await admin.http.post(f"{servers}/disconnect", json={"force": True})
        assert forced.json()["status"] == "DISCONNECTED"


async def test_deleted_server_is_gone_and_unknown_ids_are_404_on_every_route(
    database: Database, upstream_url: str
) -> None:
    async with serve_admin(admin_settings(database, http_server("alpha", upstream_url))) as admin:
        await admin.settle()
        server_id = await admin.server_id("alpha")
        deleted = await admin.http.delete(f"{API}/servers/{server_id}")
        assert (deleted.status_code, deleted.content) == (204, b"")
        assert (await admin.http.get(f"{API}/servers")).json() == []
        assert "alpha" not in admin.gateway.supervisors

        for gone in (server_id, UNKNOWN_ID):
            answers = [
                await admin.http.get(f"{API}/servers/{gone}"),
                await admin.http.delete(f"{API}/servers/{gone}"),
                await admin.http.post(f"{API}/servers/{gone}/connect"),
                await admin.http.post(f"{API}/servers/{gone}/disconnect"),
                await admin.http.get(f"{API}/servers/{gone}/tools"),
                await admin.http.post(f"{API}/servers/{gone}/tools/echo/call", json={}),
            ]
            assert [a.status_code for a in answers] == [404] * 6
            assert answers[0].json() == {"detail": f"Server not found: {gone}"}


def _locations(answer: Any) -> list[str]:
    return [".".join(map(str, err["loc"])) for err in answer.json()["detail"]]


async def test_registration_refusals_name_the_field_and_follow_br_001(database: Database) -> None:
    async with serve_admin(admin_settings(database, limits={"max_servers": 2})) as admin:
        first = await admin.http.post(f"{API}/servers", json=stdio_body("alpha", auto_connect=False))
        assert first.status_code == 201
        assert first.json()["status"] == "DISCONNECTED"

        duplicate = await admin.http.post(f"{API}/servers", json=stdio_body("alpha", auto_connect=False))
        assert (duplicate.status_code, duplicate.json()) == (409, {"detail": "Server already exists: alpha"})

        bad_name = await admin.http.post(f"{API}/servers", json=stdio_body("Alpha", auto_connect=False))
        assert bad_name.status_code == 422
        assert _locations(bad_name) == ["body.name"]
        assert bad_name.json()["detail"][0]["msg"].startswith("name: must match ^[a-z][a-z0-9_-]*$")

        no_command = stdio_body("beta", auto_connect=False)
        del no_command["connection_config"]["command"]
        missing = await admin.http.post(f"{API}/servers", json=no_command)
        assert (missing.status_code, _locations(missing)) == (422, ["body.connection_config.command"])
        assert "required for transport stdio" in missing.json()["detail"][0]["msg"]

        wrong = {"name": "web", "transport_type": "ftp", "connection_config": {"url": "http://h/sse"}}
        transport = await admin.http.post(f"{API}/servers", json=wrong)
        assert (transport.status_code, _locations(transport)) == (422, ["body.transport_type"])

        secret = {
            "name": "web",
            "transport_type": "Sse",
            "connection_config": {"url": "ftp://x", "headers": {"A": "tok"}},
        }
        bad_url = await admin.http.post(f"{API}/servers", json=secret)
        assert (bad_url.status_code, _locations(bad_url)) == (422, ["body.connection_config.url"])
        assert "tok" not in bad_url.text, "422 answers do not echo inputs, which may hold secrets"

        http_ok = {
            "name": "web",
            "transport_type": "http",
            "connection_config": {"base_url": "http://127.0.0.1:9/mcp"},
        }
        assert (await admin.http.post(f"{API}/servers", json=http_ok)).status_code == 201
        past_limit = await admin.http.post(f"{API}/servers", json=stdio_body("gamma", auto_connect=False))
        assert past_limit.status_code == 422
        assert "server limit" in past_limit.json()["detail"]


async def test_servers_registered_through_the_api_survive_a_gateway_restart(
    database: Database, upstream_url: str
) -> None:
    async with serve_admin(admin_settings(database)) as admin:
        body = http_body("alpha", upstream_url, headers={"Authorization": "Bearer s3cret"})
        created = await admin.http.post(f"{API}/servers", json=body)
        server_id = created.json()["id"]
        await admin.settle()
    async with serve_admin(admin_settings(database)) as admin:
        await admin.settle()
        detail = await admin.http.get(f"{API}/servers/{server_id}")
        assert detail.status_code == 200
        assert (detail.json()["name"], detail.json()["source"]) == ("alpha", "api")
        assert detail.json()["status"] == "CONNECTED"
        assert detail.json()["connection_config"]["headers"] == {"Authorization": "***"}
        assert "s3cret" not in detail.text
        tools = await admin.http.post(f"{API}/servers/{server_id}/tools/add/call", json={"arguments": {"a": 2, "b": 3}})
        assert tools.json()["structuredContent"] == {"total": 5}
