"""2025-11-25 tasks of a real upstream (npm ``server-everything``'s ``simulate-research-query``,
``taskSupport: required``) relayed through the gateway's ``/mcp`` over real HTTP, to a real SDK
client at the handshake era: the capability, the task, its status, its result, cancel, and
the errors a client sees for an id the gateway never gave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator.audit import AuditQuery, Outcome
from mcp_aggregator.errors import TaskNotFoundError
from mcp_aggregator.relay.task_relay import client_task_id, owner_of, with_client_ids
from tests.conftest import npm_server, running_gateway, settings_for, stdio_gateway
from tests.serve.http_face import face_settings, http_face

TOOL = "everything__simulate-research-query"
DEADLINE = 30


@asynccontextmanager
async def task_client(tmp_path: Path, **client_kwargs: Any) -> AsyncIterator[Client]:
    settings = face_settings(tmp_path, npm_server("everything", "mcp-server-everything", "stdio"))
    async with http_face(settings) as face:
        # The capability is declared at initialize: only once the upstream has connected.
        await face.gateway.wait_settled(DEADLINE)
        assert face.gateway.servers_with("tasks") == ["everything"]
        async with Client(face.mcp_url, mode="legacy", cache=None, **client_kwargs) as client:
            yield client


async def raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request the SDK client has no typed method for (its ``tools/call`` would refuse a
    ``CreateTaskResult``), the way a tasks-aware client sends it."""
    with anyio.fail_after(DEADLINE):
        return await client.session._dispatcher.send_raw_request(method, params)


async def start_task(client: Client) -> types.CreateTaskResult:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools[TOOL].execution is not None and tools[TOOL].execution.task_support == "required"
    answer = await raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": "gateways"}, "task": {}})
    return types.CreateTaskResult.model_validate(answer)


async def test_a_task_augmented_call_returns_a_task_whose_status_and_result_come_through(tmp_path: Path) -> None:
    async with task_client(tmp_path) as client:
        tasks = client.server_capabilities.tasks
        assert tasks is not None and tasks.requests is not None and tasks.requests.tools is not None
        assert tasks.requests.tools.call is not None

        created = await start_task(client)
        task_id = created.task.task_id
        assert task_id.startswith("everything."), task_id
        assert created.task.status == "working"

        status = types.GetTaskResult.model_validate(await raw(client, "tasks/get", {"taskId": task_id}))
        assert status.task_id == task_id
        assert status.status in ("working", "completed")

        listed = types.ListTasksResult.model_validate(await raw(client, "tasks/list", {}))
        assert task_id in [task.task_id for task in listed.tasks]

        # tasks/result waits for the task to end (about four seconds of simulated research).
        payload = await raw(client, "tasks/result", {"taskId": task_id})
        result = types.CallToolResult.model_validate(payload)
        assert not result.is_error
        assert "Research Report: gateways" in result.content[0].text  # type: ignore[union-attr]
        related = (payload.get("_meta") or {}).get("io.modelcontextprotocol/related-task")
        assert related is None or related["taskId"] == task_id

        done = types.GetTaskResult.model_validate(await raw(client, "tasks/get", {"taskId": task_id}))
        assert done.status == "completed"


async def test_a_task_that_asks_for_input_reaches_the_client_during_tasks_result(tmp_path: Path) -> None:
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"interpretation": "clarified-by-client"})

    async with task_client(tmp_path, elicitation_callback=elicit) as client:
        answer = await raw(
            client, "tools/call", {"name": TOOL, "arguments": {"topic": "gateways", "ambiguous": True}, "task": {}}
        )
        task_id = types.CreateTaskResult.model_validate(answer).task.task_id
        # The upstream queues its question for the task and delivers it during tasks/result.
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": task_id}))
        assert len(asked) == 1 and "multiple interpretations" in asked[0]
        assert "clarified-by-client" in result.content[0].text  # type: ignore[union-attr]


async def test_a_task_is_cancelled_through_the_gateway(tmp_path: Path) -> None:
    async with task_client(tmp_path) as client:
        task_id = (await start_task(client)).task.task_id
        cancelled = types.CancelTaskResult.model_validate(await raw(client, "tasks/cancel", {"taskId": task_id}))
        assert cancelled.task_id == task_id
        assert cancelled.status == "cancelled"
        status = types.GetTaskResult.model_validate(await raw(client, "tasks/get", {"taskId": task_id}))
        assert status.status == "cancelled"


@pytest.mark.parametrize(
    ("task_id", "words"),
    [
        ("no-such-task", "Task not found: 'no-such-task' is not a task id this gateway gave"),
        ("elsewhere.abc", "Task not found: 'elsewhere.abc' is not a task id this gateway gave"),
    ],
)
async def test_a_task_id_the_gateway_never_gave_gets_a_clear_error(tmp_path: Path, task_id: str, words: str) -> None:
    async with task_client(tmp_path) as client:
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            with pytest.raises(MCPError) as caught:
                await raw(client, method, {"taskId": task_id})
            assert caught.value.error.code == types.INVALID_PARAMS
            assert caught.value.error.message == words


async def test_an_unknown_task_of_a_known_upstream_gets_its_upstreams_error(tmp_path: Path) -> None:
    async with task_client(tmp_path) as client:
        with pytest.raises(MCPError) as caught:
            await raw(client, "tasks/get", {"taskId": "everything.not-a-task"})
        assert caught.value.error.code == types.INVALID_PARAMS
        message = caught.value.error.message
        assert message.startswith("everything: ") and "Task not found" in message, message


async def test_a_task_for_an_unknown_tool_is_refused_by_name(tmp_path: Path) -> None:
    async with task_client(tmp_path) as client:
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": "everything__nope", "arguments": {}, "task": {}})
        assert caught.value.error.message == "Tool not found: everything__nope"
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": TOOL, "arguments": {}, "task": {"ttl": "soon"}})
        assert caught.value.error.code == types.INVALID_PARAMS
        assert caught.value.error.message.startswith("Invalid params: task.ttl: "), caught.value.error.message


def test_task_ids_are_the_upstreams_prefixed_with_its_server() -> None:
    assert client_task_id("everything", "a.b") == "everything.a.b"
    assert owner_of("everything.a.b") == ("everything", "a.b")
    for bad in ("plain", ".x", "x."):
        with pytest.raises(TaskNotFoundError):
            owner_of(bad)
    payload = {
        "task": {"taskId": "1"},
        "tasks": [{"taskId": "2"}],
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "3"}},
    }
    assert with_client_ids("s", payload) == {
        "task": {"taskId": "s.1"},
        "tasks": [{"taskId": "s.2"}],
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "s.3"}},
    }


async def test_a_task_augmented_call_is_refused_by_a_policy_like_any_call() -> None:
    sections = {"policies": [{"name": "no-research", "deny": 'tool.original_name == "simulate-research-query"'}]}
    settings = settings_for(npm_server("everything", "mcp-server-everything", "stdio"), sections=sections)
    async with running_gateway(settings, mode="legacy") as (_, client):
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": "x"}, "task": {}})
        assert "no-research" in caught.value.error.message


async def test_a_2026_client_is_told_of_no_tasks_and_tasks_requests_are_not_found() -> None:
    settings = settings_for(npm_server("everything", "mcp-server-everything", "stdio"))
    async with running_gateway(settings) as (gateway, client):
        assert gateway.servers_with("tasks") == ["everything"]
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tasks is None
        with pytest.raises(MCPError) as caught, anyio.fail_after(DEADLINE):
            await client.session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="everything.x")), types.GetTaskResult
            )
        assert caught.value.error.code == types.METHOD_NOT_FOUND


async def test_a_task_runs_through_the_gateway_served_over_stdio(tmp_path: Path) -> None:
    params = stdio_gateway(tmp_path, npm_server("everything", "mcp-server-everything", "stdio"))
    async with Client(params, mode="legacy", cache=None) as client:
        # Whether ``tasks`` was declared depends on the upstream having connected before this
        # client's initialize; the requests are served either way.
        task_id = (await start_task(client)).task.task_id
        assert task_id.startswith("everything.")
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": task_id}))
        assert "Research Report: gateways" in result.content[0].text  # type: ignore[union-attr]


async def test_a_task_and_its_requests_land_in_the_audit() -> None:
    settings = settings_for(npm_server("everything", "mcp-server-everything", "stdio"))
    async with running_gateway(settings, mode="legacy") as (gateway, client):
        assert gateway.audit is not None
        task_id = (await start_task(client)).task.task_id
        await raw(client, "tasks/get", {"taskId": task_id})
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        entries = (await gateway.audit.log.query(AuditQuery())).items
    seen = {(entry.method, entry.server, entry.tool, entry.outcome) for entry in entries}
    assert ("tools/call", "everything", "simulate-research-query", Outcome.OK) in seen
    assert ("tasks/get", "everything", owner_of(task_id)[1], Outcome.OK) in seen
