"""Every call lands in the audit trail with its client, profile and outcome, whichever way it
came (the fast path, the full pipeline, facades, the aggregator query, the admin REST API),
on SQLite and PostgreSQL; a denied call as ``denied``; read back over real HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.routing import Route

from mcp_aggregator.audit import AuditQuery, Outcome
from mcp_aggregator.errors import AccessDeniedError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, Invocation
from mcp_aggregator.relay.pipeline import Next
from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import Settings
from tests.conftest import running_gateway, settings_for, stdio_fixture
from tests.http_serving import served_over_http
from tests.registry.conftest import Database

TOKEN = "audit-test-admin-token-0123456789"
API = "/api/v1/aggregator"
DEADLINE = 30


def audited_settings(database: Database | None = None, **sections: Any) -> Settings:
    extra: dict[str, Any] = dict(sections)
    if database is not None:
        extra["registry"] = {"database_url": database.url, "pg_schema": database.pg_schema}
    return settings_for(stdio_fixture("alpha"), sections=extra)


def fast_path_of(app: Any) -> FastPath:
    [fast] = [r.endpoint for r in app.routes if isinstance(r, Route) and r.path == "/mcp"]
    while not isinstance(fast, FastPath):
        fast = fast.app  # behind the client authentication of the HTTP face
    return fast


async def audit_items(base: str, **params: str | int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        answer = await http.get(f"{API}/audit", params=params)
    assert answer.status_code == 200, answer.text
    page: dict[str, Any] = answer.json()
    return page


async def progress(done: float, total: float | None, message: str | None) -> None:
    pass


async def test_every_way_a_call_comes_lands_in_the_audit(database: Database) -> None:
    settings = audited_settings(database, audit={"include_arguments": True})
    async with served_over_http(settings, admin_token=TOKEN) as served:
        fast, gateway = fast_path_of(served.app), served.gateway
        assert gateway.audit is not None
        async with Client(served.mcp_url, cache=None) as client:  # type: ignore[arg-type]
            await client.call_tool("alpha__echo", {"text": "fast", "api_key": "k"})
            failed = await client.call_tool("alpha__fail", {"message": "nope"})
            assert failed.is_error and fast.forwarded == 2
            # A progress token takes the full pipeline.
            await client.call_tool("alpha__echo", {"text": "full"}, progress_callback=progress)
            assert fast.forwarded == 2
        async with httpx.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            [server] = (await http.get(f"{API}/servers")).json()
            called = await http.post(
                f"{API}/servers/{server['id']}/tools/echo/call", json={"arguments": {"text": "rest"}}
            )
            assert called.status_code == 200, called.text
            named = await http.post(f"{API}/tools/call", json={"name": "alpha.echo", "arguments": {"text": "named"}})
            assert named.status_code == 200, named.text
            queried = await http.post(f"{API}/query", json={"query": "hello", "servers": ["alpha"]})
            assert queried.status_code == 200, queried.text
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        items = (await audit_items(served.base, limit=50))["items"]

    assert all(item["method"] == "tools/call" and item["server"] == "alpha" for item in items)
    fast_ok, fast_error, full, rest, named = items[-1], items[-2], items[-3], items[-4], items[-5]
    assert (fast_ok["tool"], fast_ok["outcome"], fast_ok["client"], fast_ok["profile"]) == (
        "echo",
        "ok",
        None,
        "default",
    )
    assert fast_ok["arguments"] == {"text": "fast", "api_key": "***"}
    assert fast_ok.get("jsonrpc_id") is not None and fast_ok["duration_ms"] >= 0
    assert len(fast_ok["request_id"]) == 16, "the HTTP request's id, made by the gateway"
    assert (fast_error["tool"], fast_error["outcome"]) == ("fail", "error")
    assert (full["tool"], full["outcome"], full["arguments"]) == ("echo", "ok", {"text": "full"})
    assert full.get("jsonrpc_id") is not None and full.get("jsonrpc_id") != fast_ok.get("jsonrpc_id")
    assert full["request_id"] != fast_ok["request_id"]
    assert (rest["tool"], rest["client"], rest["outcome"], rest["arguments"]) == (
        "echo",
        "admin-api",
        "ok",
        {"text": "rest"},
    )
    assert (named["tool"], named["client"], named["arguments"]) == ("echo", "admin-api", {"text": "named"})
    assert rest["request_id"] != named["request_id"] and "jsonrpc_id" not in rest
    fan_out = items[:-5]
    assert fan_out and all(item["client"] == "admin-api" for item in fan_out)
    assert {item["tool"] for item in fan_out} <= {"search", "echo"}


async def test_facade_calls_are_audited_as_the_upstream_calls_they_make() -> None:
    settings = settings_for(stdio_fixture("alpha"), exposure="facades")
    async with running_gateway(settings) as (gateway, client):
        assert gateway.audit is not None
        result = await client.call_tool(
            "tools", {"cmd": "execute", "params": {"name": "echo", "arguments": {"text": "x"}}}
        )
        assert not result.is_error
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        [entry] = (await gateway.audit.log.query(AuditQuery())).items
    assert (entry.method, entry.server, entry.tool, entry.outcome) == ("tools/call", "alpha", "echo", Outcome.OK)
    assert entry.jsonrpc_id is not None  # the client's request to the facade


class ProfilePolicyDeniedError(AccessDeniedError):
    """As a profile's policy stage refuses a call."""


async def deny_delete(invocation: Invocation, send: Next) -> Any:
    if invocation.target == "fail":
        raise ProfilePolicyDeniedError(f"client {invocation.caller.identity.name} may not call fail")
    return await send()


async def test_a_call_a_policy_stage_refuses_is_audited_denied_with_the_client_and_profile() -> None:
    ci = Caller(identity=ClientIdentity("ci-bot", "ops"), request_id="r-1")
    async with Gateway(audited_settings(), stages=[deny_delete]) as gateway:
        await gateway.wait_settled(DEADLINE)
        assert gateway.audit is not None
        with pytest.raises(ProfilePolicyDeniedError):
            await gateway.pipeline.call_tool("alpha__fail", {"message": "x"}, caller=ci)
        result = await gateway.pipeline.call_tool("alpha__echo", {"text": "y"}, caller=ci)
        assert isinstance(result, types.CallToolResult)
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        denied, allowed = (await gateway.audit.log.query(AuditQuery())).items[::-1]
    assert (denied.client, denied.profile, denied.tool, denied.outcome) == ("ci-bot", "ops", "fail", Outcome.DENIED)
    assert denied.error is not None and denied.error.startswith("ProfilePolicyDeniedError: client ci-bot")
    assert denied.jsonrpc_id == "r-1" and denied.arguments is None
    assert (allowed.client, allowed.profile, allowed.outcome) == ("ci-bot", "ops", Outcome.OK)


async def test_audit_filters_paging_and_export_over_http() -> None:
    async with served_over_http(audited_settings(), admin_token=TOKEN) as served:
        gateway = served.gateway
        assert gateway.audit is not None
        for i in range(5):
            caller = Caller(identity=ClientIdentity("ann" if i % 2 else "bob", "ops" if i < 3 else "dev"), request_id=i)
            await gateway.pipeline.call_tool("alpha__echo", {"text": str(i)}, caller=caller)
        await gateway.pipeline.call_tool("alpha__fail", {}, caller=Caller(identity=ClientIdentity("ann", "dev")))
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()

        ann = await audit_items(served.base, client="ann")
        assert [item.get("jsonrpc_id") for item in ann["items"]] == [None, "3", "1"]
        assert [i.get("jsonrpc_id") for i in (await audit_items(served.base, profile="dev"))["items"]] == [
            None,
            "4",
            "3",
        ]
        failed = (await audit_items(served.base, outcome="error", tool="fail", server="alpha"))["items"]
        assert [(i["client"], i["tool"]) for i in failed] == [("ann", "fail")]
        assert "arguments" not in failed[0] and len(failed[0]["arguments_digest"]) == 64
        assert (await audit_items(served.base, since="2999-01-01T00:00:00Z"))["items"] == []

        first = await audit_items(served.base, limit=4)
        assert len(first["items"]) == 4 and first["next_before"] == first["items"][-1]["id"]
        rest = await audit_items(served.base, limit=4, before=first["next_before"])
        assert len(rest["items"]) == 2 and rest["next_before"] is None
        ids = [item["id"] for item in first["items"] + rest["items"]]
        assert ids == sorted(ids, reverse=True)

        async with httpx.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            export = await http.get(f"{API}/audit/export", params={"client": "ann"})
            assert export.status_code == 200 and export.headers["content-type"] == "application/x-ndjson"
            lines = [orjson.loads(line) for line in export.content.splitlines()]
            assert lines == ann["items"]
            for params, field in [
                ({"limit": 0}, "limit"),
                ({"limit": "many"}, "limit"),
                ({"before": -1}, "before"),
                ({"before": 2**63}, "before"),
                ({"outcome": "maybe"}, "outcome"),
                ({"since": "yesterday"}, "since"),
                ({"request_id": "x" * 129}, "request_id"),
            ]:
                bad = await http.get(f"{API}/audit", params=params)
                assert bad.status_code == 422, (params, bad.text)
                assert bad.json()["detail"][0]["msg"].startswith(f"{field}: ")
            anonymous = await http.get(f"{API}/audit", headers={"Authorization": ""})
            assert anonymous.status_code == 401


async def test_with_the_audit_off_nothing_is_installed_and_the_api_says_so() -> None:
    async with served_over_http(audited_settings(audit={"enabled": False}), admin_token=TOKEN) as served:
        assert served.gateway.audit is None
        assert not served.gateway.pipeline.per_call
        async with httpx.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            answer = await http.get(f"{API}/audit")
        assert answer.status_code == 404
        assert "audit.enabled" in answer.json()["detail"]


CI_TOKEN = "ci-client-token-0123456789abcdef"


async def test_a_named_clients_calls_on_its_profile_are_audited_with_both_and_a_policy_refusal_as_denied() -> None:
    settings = audited_settings(
        clients=[{"name": "ci", "token": CI_TOKEN, "profiles": ["ops"]}],
        profiles=[{"name": "ops", "servers": ["alpha"], "exposure": "passthrough"}],
        policies=[{"name": "no-fail-for-ci", "deny": 'tool.original_name == "fail" && client.name == "ci"'}],
    )
    async with served_over_http(settings, admin_token=TOKEN) as served:
        gateway = served.gateway
        assert gateway.audit is not None
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {CI_TOKEN}"})
        async with (
            http,
            Client(streamable_http_client(f"{served.mcp_url}/ops", http_client=http), cache=None) as client,
        ):
            await client.call_tool("alpha__echo", {"text": "fast"})
            with pytest.raises(MCPError):
                await client.call_tool("alpha__fail", {"message": "x"})
            with pytest.raises(MCPError):
                await client.call_tool("alpha__fail", {"message": "y"}, progress_callback=progress)
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        items = (await audit_items(served.base, client="ci", profile="ops"))["items"]
    assert [(i["tool"], i["outcome"]) for i in items] == [("fail", "denied"), ("fail", "denied"), ("echo", "ok")]
    assert all(i["client"] == "ci" and i["profile"] == "ops" for i in items)
    assert "no-fail-for-ci" in items[0]["error"]
