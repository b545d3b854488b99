"""Held calls over real parts: a real upstream that counts the calls reaching it
(``tests/upstream/tally_server.py``), real SDK clients of both eras (in process, and over
streamable HTTP), the real admin REST API and CLI.

A held call runs once when a person approves it (the client through elicitation, an admin
through REST or the CLI), and never reaches the upstream when it is denied (the client
is told why) or expires."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus
from mcp_aggregator.approvals.config import ApprovalRule
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.live.event_hub import Event
from mcp_aggregator.serve.runner import serve_http
from tests.audit.test_audit_through_gateway import fast_path_of
from tests.caching.test_result_cache_through_gateway import tally_upstream, text
from tests.cli.conftest import run_cli
from tests.conftest import serving_gateway, settings_for
from tests.http_serving import served_over_http
from tests.serve.http_face import START_SECS, Face, face_settings

ADMIN = "approvals-test-admin-token-0123456789"
API = "/api/v1/aggregator"
DEADLINE = 30


def rule(**extra: Any) -> dict[str, Any]:
    return {"name": "tallies", "tools": ["tally.tally"], "timeout_secs": 60, **extra}


class Desk:
    """Watches a gateway's approvals through the hook the page's event stream uses."""

    def __init__(self, gateway: Gateway) -> None:
        self.seen: list[Approval] = []
        self._changed = anyio.Event()
        gateway.approvals.desk.listeners.append(self._heard)

    async def _heard(self, approval: Approval) -> None:
        self.seen.append(approval)
        self._changed.set()
        self._changed = anyio.Event()

    async def next_held(self) -> Approval:
        """The next call held from now on (waits for it)."""
        start = len(self.seen)
        with anyio.fail_after(DEADLINE):
            while True:
                for approval in self.seen[start:]:
                    if approval.status is ApprovalStatus.PENDING:
                        return approval
                await self._changed.wait()


class Asked:
    """A client's elicitation handler: approves a call whose question holds ``"label": "yes"``,
    denies (with a reason) every other one; it records the questions."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.messages.append(params.message)
        if '"label": "yes"' in params.message:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="accept", content={"approve": False, "reason": "not on a Friday"})


async def reached(client: Client) -> int:
    result = await client.call_tool("tally__reached_calls", {})
    return int(text(result))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_calling_client_approves_or_denies_a_held_call_through_elicitation_in_both_eras(mode: str) -> None:
    asked = Asked()
    settings = settings_for(tally_upstream(), sections={"approvals": [rule(ask="client")]})
    async with (
        serving_gateway(settings) as (_, gateway_server),
        Client(gateway_server.server, mode=mode, cache=None, elicitation_callback=asked) as client,
    ):
        with anyio.fail_after(DEADLINE):
            approved = await client.call_tool("tally__tally", {"label": "yes"})
        assert text(approved) == "yes #1"
        with pytest.raises(MCPError) as refused:
            await client.call_tool("tally__tally", {"label": "no", "token": "ghp_" + "a" * 36})
        assert "was denied: not on a Friday" in str(refused.value)
        assert await reached(client) == 1
    yes, no = asked.messages
    assert "Tool: tally" in yes and "Server: tally" in yes and '"label": "yes"' in yes
    assert "ghp_" not in no and "[REDACTED:" in no  # secrets masked as the guardrails mask them


class Calls:
    """Tool calls made in the background of a test, each answer (or error text) kept by label."""

    def __init__(self, client: Client, tg: Any) -> None:
        self.client = client
        self.tg = tg
        self.answers: dict[str, str] = {}

    def start(self, label: str, tool: str = "tally__tally") -> None:
        async def call() -> None:
            try:
                self.answers[label] = text(await self.client.call_tool(tool, {"label": label}))
            except MCPError as exc:
                self.answers[label] = f"error: {exc}"

        self.tg.start_soon(call)


def admin_api(base: str, token: str = ADMIN) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base + API, headers={"Authorization": f"Bearer {token}"}, timeout=DEADLINE)


ADA = "ada-token-0123456789abcdef"
FIELDS = {
    "id", "rule", "client", "profile", "server", "tool", "arguments", "digest", "status",
    "created_at", "expires_at", "decided_by", "reason",
}  # fmt: skip


async def test_an_admin_approves_a_held_call_over_rest_and_it_runs_once_and_a_denied_one_never_runs() -> None:
    clients = [{"name": "ada", "token": ADA, "profiles": ["default"]}]
    settings = settings_for(tally_upstream(), sections={"approvals": [rule(ask="admin")], "clients": clients})
    async with (
        served_over_http(settings, admin_token=ADMIN) as served,
        client_of(served.mcp_url, ADA) as client,
        admin_api(served.base) as admin,
        admin_api(served.base, ADA) as ada_as_admin,
    ):
        desk = Desk(served.gateway)
        fast = fast_path_of(served.app)
        async with anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start("ship-it")
            held = await desk.next_held()
            listed = (await admin.get("/approvals", params={"server": "tally", "client": "ada"})).json()
            [item] = listed["approvals"]
            assert set(item) >= FIELDS
            assert (item["id"], item["status"], item["client"], item["server"], item["tool"], item["arguments"]) == (
                held.id, "pending", "ada", "tally", "tally", {"label": "ship-it"},
            )  # fmt: skip
            # A client's token never decides through the admin path, its own call least of all.
            assert (await ada_as_admin.post(f"/approvals/{held.id}", json={"decision": "approve"})).status_code == 401
            assert (await admin.post(f"/approvals/{held.id}", json={"decision": "maybe"})).status_code == 422
            decided = await admin.post(f"/approvals/{held.id}", json={"decision": "approve"})
            assert decided.status_code == 200, decided.text
            assert (decided.json()["status"], decided.json()["decided_by"]) == ("approved", "admin")
        assert calls.answers["ship-it"] == "ship-it #1"
        again = await admin.post(f"/approvals/{held.id}", json={"decision": "deny"})
        assert again.status_code == 409 and "approved already" in again.text
        assert (await admin.post("/approvals/nope", json={"decision": "deny"})).status_code == 404

        async with anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start("drop-it")
            held = await desk.next_held()
            denied = await admin.post(f"/approvals/{held.id}", json={"decision": "deny", "reason": "wrong branch"})
            assert denied.json()["reason"] == "wrong branch"
        assert "was denied: wrong branch" in calls.answers["drop-it"]
        # One held call by its id (as an audit event names it): who decided, how, why, on which digest.
        shown = (await admin.get(f"/approvals/{held.id}")).json()
        assert (shown["status"], shown["decided_by"], shown["via"], shown["reason"], shown["digest"]) == (
            "denied", "admin", "rest", "wrong branch", held.digest,
        )  # fmt: skip
        missing = await admin.get("/approvals/nope")
        assert missing.status_code == 404 and "nope" in missing.text

        forwarded = fast.forwarded
        assert await reached(client) == 1  # only the approved call reached the upstream
        assert fast.forwarded == forwarded + 1  # a call under no rule takes the fast path
        assert (await admin.get("/approvals")).json() == {"approvals": [], "configured": True}
        every = (await admin.get("/approvals", params={"status": "all"})).json()["approvals"]
        assert [a["status"] for a in every] == ["denied", "approved"]
        metrics = (await admin.get(served.base + "/metrics")).text
        assert 'mcp_aggregator_approval_decisions_total{status="approved"} 1' in metrics
        assert 'mcp_aggregator_approval_decisions_total{status="denied"} 1' in metrics
        assert "mcp_aggregator_approvals_waiting 0" in metrics


async def test_an_admin_decides_held_calls_with_the_cli_an_undecided_one_expires_and_the_audit_keeps_it_all() -> None:
    rules = [rule(ask="admin"), {"name": "quick", "tools": ["tally.broken"], "timeout_secs": 1}]
    settings = settings_for(tally_upstream(), sections={"approvals": rules})
    async with (
        served_over_http(settings, admin_token=ADMIN) as served,
        client_of(served.mcp_url, None) as client,
        admin_api(served.base) as admin,
    ):
        desk = Desk(served.gateway)
        cli = ("--gateway", served.base, "--token", ADMIN)
        async with anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start("via-cli")
            held = await desk.next_held()
            listed = await run_cli("approvals", "list", *cli)
            assert listed.exit_code == 0, listed.output
            assert held.id in listed.output and "pending" in listed.output
            as_json = await run_cli("approvals", "list", "--tool", "tally", "--json", *cli)
            assert [a["id"] for a in json.loads(as_json.stdout)["approvals"]] == [held.id]
            bad = await run_cli("approvals", "list", "--status", "maybe", *cli)
            assert bad.exit_code == 1 and "status" in bad.output
            approved = await run_cli("approvals", "approve", held.id, *cli)
            assert approved.exit_code == 0, approved.output
            assert f"{held.id}: approved (tally.tally)" in approved.output
        assert calls.answers["via-cli"] == "via-cli #1"

        async with anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start("not-via-cli")
            denied_call = await desk.next_held()
            denied = await run_cli("approvals", "deny", denied_call.id, "--reason", "not today", *cli)
            assert denied.exit_code == 0, denied.output
        assert "was denied: not today" in calls.answers["not-via-cli"]
        twice = await run_cli("approvals", "deny", denied_call.id, *cli)
        assert twice.exit_code == 1 and "denied already" in twice.output

        with pytest.raises(MCPError) as expired:
            await client.call_tool("tally__broken", {})
        assert "was not approved in time (it expired)" in str(expired.value)
        assert await reached(client) == 1

        assert served.gateway.audit is not None
        await served.gateway.audit.flush()
        items = (await admin.get("/audit", params={"server": "tally"})).json()["items"]
        events = {
            (item["method"], item["error"].split(": ")[1]) for item in items if item["method"].startswith("approvals/")
        }
        assert events == {
            ("approvals/held", "held"), ("approvals/approved", "approved"),
            ("approvals/denied", "denied"), ("approvals/expired", "expired"),
        }  # fmt: skip
        [approved_entry] = [item for item in items if item["method"] == "approvals/approved"]
        assert "by admin; via cli" in approved_entry["error"] and f"digest {held.digest}" in approved_entry["error"]


@asynccontextmanager
async def client_of(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


async def test_a_gateway_told_to_stop_refuses_the_calls_it_holds_and_their_clients_are_told(tmp_path: Path) -> None:
    settings = face_settings(tmp_path, tally_upstream())
    settings = settings.model_copy(update={"approvals": (ApprovalRule(name="tallies", tools=("tally.tally",)),)})
    ready, shutdown = anyio.Event(), anyio.Event()
    faces: list[Face] = []

    def announce(gateway: Gateway, url: str, link: str) -> None:
        faces.append(Face(gateway, url, link))
        ready.set()

    async with anyio.create_task_group() as serving:
        serving.start_soon(partial(serve_http, settings, announce=announce, shutdown=shutdown))
        with anyio.fail_after(START_SECS):
            await ready.wait()
        desk = Desk(faces[0].gateway)
        async with client_of(faces[0].mcp_url, None) as client, anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start("late")
            await desk.next_held()
            shutdown.set()
    assert "was cancelled before anyone decided: the gateway stopped while the call was held" in calls.answers["late"]


async def test_a_code_mode_script_waits_for_the_approval_of_its_held_call_and_a_denial_raises_in_the_script() -> None:
    asked = Asked()
    settings = settings_for(tally_upstream(), exposure="code", sections={"approvals": [rule(ask="client")]})
    denied = (
        "try:\n    await call_tool('tally.tally', {'label': 'no'})\nexcept PermissionError as e:\n    r = str(e)\nr"
    )
    async with (
        serving_gateway(settings) as (_, gateway_server),
        Client(gateway_server.server, mode="legacy", cache=None, elicitation_callback=asked) as client,
    ):
        with anyio.fail_after(DEADLINE):
            approved = await client.call_tool("run_code", {"code": "await call_tool('tally.tally', {'label': 'yes'})"})
            refused = await client.call_tool("run_code", {"code": denied})
            counted = await client.call_tool("run_code", {"code": "await call_tool('tally.reached_calls', {})"})
    assert json.loads(text(approved))["result"] == "yes #1"
    assert "was denied: not on a Friday" in json.loads(text(refused))["result"]
    assert json.loads(text(counted))["result"] == 1
    assert len(asked.messages) == 2


async def test_a_profiles_own_rule_holds_the_calls_through_that_profile_only() -> None:
    profiles = [{"name": "ops", "servers": ["tally"], "approvals": [rule(ask="admin")]}]
    settings = settings_for(tally_upstream(), sections={"profiles": profiles})
    async with (
        served_over_http(settings, admin_token=ADMIN) as served,
        client_of(served.mcp_url, None) as default,
        client_of(f"{served.mcp_url}/ops", None) as ops,
        admin_api(served.base) as admin,
    ):
        desk = Desk(served.gateway)
        with anyio.fail_after(DEADLINE):
            assert text(await default.call_tool("tally__tally", {"label": "free"})) == "free #1"
        async with anyio.create_task_group() as tg:
            calls = Calls(ops, tg)
            calls.start("ops")
            held = await desk.next_held()
            assert held.profile == "ops"
            await admin.post(f"/approvals/{held.id}", json={"decision": "approve"})
        assert calls.answers["ops"] == "ops #2"


async def test_each_change_of_a_held_call_reaches_the_event_hub_as_an_approval_event_without_its_arguments() -> None:
    settings = settings_for(tally_upstream(), sections={"approvals": [rule(ask="admin")]})
    label = "label-only-the-rest-api-may-show"
    async with (
        served_over_http(settings, admin_token=ADMIN) as served,
        client_of(served.mcp_url, None) as client,
        admin_api(served.base) as admin,
        served.gateway.events.subscribe() as subscription,
    ):
        desk = Desk(served.gateway)
        async with anyio.create_task_group() as tg:
            calls = Calls(client, tg)
            calls.start(label)
            held = await desk.next_held()
            await admin.post(f"/approvals/{held.id}", json={"decision": "approve"})
        assert calls.answers[label] == f"{label} #1"
        heard: list[Event] = []
        with anyio.fail_after(DEADLINE):
            while len(heard) < 2:
                event = await subscription.next(DEADLINE)
                assert event is not None, "the hub closed before both approval events came"
                if event.kind == "approval":
                    heard.append(event)
    assert [(e.data["id"], e.data["status"]) for e in heard] == [(held.id, "pending"), (held.id, "approved")]
    assert heard[0].data == {
        "id": held.id, "status": "pending", "server": "tally", "tool": "tally", "rule": "tallies", "profile": "default",
    }  # fmt: skip
    for event in heard:
        assert label.encode() not in event.sse() and "arguments" not in event.data
