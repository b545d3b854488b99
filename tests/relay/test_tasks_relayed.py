"""2025-11-25 tasks of a real upstream (npm ``server-everything``'s ``simulate-research-query``,
``taskSupport: required``) relayed through the gateway's ``/mcp`` over real HTTP, to a real SDK
client at the handshake era: the capability, the task, its status, its result, cancel, and
the errors a client sees for an id the gateway never gave.

Each test has a client of its own, but the tests that need no settings of their own share one
gateway per face (the upstream's start and the gateway's cost about two seconds of CPU each);
what they assert of the upstream's tasks and the audit holds whatever the other tests did."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator.audit import AuditQuery, Outcome
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.relay.task_relay import owner_of
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.settings import ServerConfig
from tests.conftest import npm_server, running_gateway, serving_gateway, settings_for, stdio_gateway
from tests.held import held
from tests.serve.http_face import Face, face_settings, http_face

TOOL = "everything__simulate-research-query"
DEADLINE = 30

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""


def everything() -> ServerConfig:
    return npm_server("everything", "mcp-server-everything", "stdio")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def face(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Face]:
    """The gateway's HTTP face over ``server-everything``, once the upstream has connected."""
    settings = face_settings(tmp_path_factory.mktemp("face"), everything())
    async with held(http_face(settings)) as face:
        await face.gateway.wait_settled(DEADLINE)
        yield face


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served() -> AsyncIterator[tuple[Gateway, GatewayServer]]:
    """The gateway over ``server-everything`` with its MCP server, for in-process clients."""
    async with held(serving_gateway(settings_for(everything()))) as both:
        yield both


@asynccontextmanager
async def task_client(face: Face, **client_kwargs: Any) -> AsyncIterator[Client]:
    # The capability is declared at initialize: only once the upstream has connected.
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


async def test_a_task_augmented_call_returns_a_task_whose_status_and_result_come_through(face: Face) -> None:
    async with task_client(face) as client:
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


async def test_a_task_that_asks_for_input_reaches_the_client_during_tasks_result(face: Face) -> None:
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"interpretation": "clarified-by-client"})

    async with task_client(face, elicitation_callback=elicit) as client:
        answer = await raw(
            client, "tools/call", {"name": TOOL, "arguments": {"topic": "gateways", "ambiguous": True}, "task": {}}
        )
        task_id = types.CreateTaskResult.model_validate(answer).task.task_id
        # The upstream queues its question for the task and delivers it during tasks/result.
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": task_id}))
        assert len(asked) == 1 and "multiple interpretations" in asked[0]
        assert "clarified-by-client" in result.content[0].text  # type: ignore[union-attr]


async def test_a_task_is_cancelled_through_the_gateway(face: Face) -> None:
    async with task_client(face) as client:
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
async def test_a_task_id_the_gateway_never_gave_gets_a_clear_error(face: Face, task_id: str, words: str) -> None:
    async with task_client(face) as client:
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            with pytest.raises(MCPError) as caught:
                await raw(client, method, {"taskId": task_id})
            assert caught.value.error.code == types.INVALID_PARAMS
            assert caught.value.error.message == words


async def test_an_unknown_task_of_a_known_upstream_gets_its_upstreams_error(face: Face) -> None:
    async with task_client(face) as client:
        with pytest.raises(MCPError) as caught:
            await raw(client, "tasks/get", {"taskId": "everything.not-a-task"})
        assert caught.value.error.code == types.INVALID_PARAMS
        message = caught.value.error.message
        assert message.startswith("everything: ") and "Task not found" in message, message


async def test_a_task_for_an_unknown_tool_is_refused_by_name(face: Face) -> None:
    async with task_client(face) as client:
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": "everything__nope", "arguments": {}, "task": {}})
        assert caught.value.error.message == "Tool not found: everything__nope"
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": TOOL, "arguments": {}, "task": {"ttl": "soon"}})
        assert caught.value.error.code == types.INVALID_PARAMS
        assert caught.value.error.message.startswith("Invalid params: task.ttl: "), caught.value.error.message


async def test_a_task_augmented_call_is_refused_by_a_policy_like_any_call() -> None:
    sections = {"policies": [{"name": "no-research", "deny": 'tool.original_name == "simulate-research-query"'}]}
    settings = settings_for(everything(), sections=sections)
    async with running_gateway(settings, mode="legacy") as (_, client):
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": "x"}, "task": {}})
        assert "no-research" in caught.value.error.message


async def test_a_2026_client_is_told_of_no_tasks_and_tasks_requests_are_not_found(
    served: tuple[Gateway, GatewayServer],
) -> None:
    gateway, gateway_server = served
    async with Client(gateway_server.server, mode="auto", cache=None) as client:
        assert gateway.servers_with("tasks") == ["everything"]
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tasks is None
        with pytest.raises(MCPError) as caught, anyio.fail_after(DEADLINE):
            await client.session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="everything.x")), types.GetTaskResult
            )
        assert caught.value.error.code == types.METHOD_NOT_FOUND


async def test_a_task_runs_through_the_gateway_served_over_stdio(tmp_path: Path) -> None:
    params = stdio_gateway(tmp_path, everything())
    async with Client(params, mode="legacy", cache=None) as client:
        # Whether ``tasks`` was declared depends on the upstream having connected before this
        # client's initialize; the requests are served either way.
        task_id = (await start_task(client)).task.task_id
        assert task_id.startswith("everything.")
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": task_id}))
        assert "Research Report: gateways" in result.content[0].text  # type: ignore[union-attr]


async def test_a_task_and_its_requests_land_in_the_audit(served: tuple[Gateway, GatewayServer]) -> None:
    gateway, gateway_server = served
    async with Client(gateway_server.server, mode="legacy", cache=None) as client:
        assert gateway.audit is not None
        task_id = (await start_task(client)).task.task_id
        await raw(client, "tasks/get", {"taskId": task_id})
        with anyio.fail_after(DEADLINE):
            await gateway.audit.flush()
        entries = (await gateway.audit.log.query(AuditQuery())).items
    seen = {(entry.method, entry.server, entry.tool, entry.outcome) for entry in entries}
    assert ("tools/call", "everything", "simulate-research-query", Outcome.OK) in seen
    assert ("tasks/get", "everything", owner_of(task_id)[1], Outcome.OK) in seen
