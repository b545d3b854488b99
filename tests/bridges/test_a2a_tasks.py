"""A long A2A task as an MCP task, through the gateway to the SDK client: at 2025-11-25 (the era
with tasks) a task-augmented call answers at once with the agent's task, whose status,
status message, result and cancellation follow the agent's; at 2026-07-28 (no tasks in the
core protocol) the same call is a plain call that reports progress."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp_types as types
import pytest
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.bridges.a2a.task_status import mcp_status, status_message
from mcp_aggregator.settings import ServerConfig
from tests.bridges.a2a_agent import TravelExecutor, build_agent_app
from tests.bridges.asgi_serving import serve_built
from tests.bridges.test_a2a_upstreams import travel_gateway
from tests.conftest import running_gateway, settings_for

DEADLINE = 20
RELATED_TASK = "io.modelcontextprotocol/related-task"


async def raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request the SDK client has no typed method for (its ``tools/call`` would refuse a
    ``CreateTaskResult``), sent the way a tasks-aware client sends it."""
    with anyio.fail_after(DEADLINE):
        return await client.session._dispatcher.send_raw_request(method, params)


async def start(client: Client, tool: str, message: str) -> types.Task:
    answer = await raw(client, "tools/call", {"name": tool, "arguments": {"message": message}, "task": {}})
    return types.CreateTaskResult.model_validate(answer).task


async def status(client: Client, task_id: str) -> types.GetTaskResult:
    return types.GetTaskResult.model_validate(await raw(client, "tasks/get", {"taskId": task_id}))


async def status_once(client: Client, task_id: str, message: str) -> types.GetTaskResult:
    """The task's status once the agent's status message is ``message`` (read until then, within
    the deadline: the agent's store records an event a moment after the agent sends it)."""
    with anyio.fail_after(DEADLINE):
        while (now := await status(client, task_id)).status_message != message:
            assert now.status == "working", now
    return now


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (TaskState.TASK_STATE_SUBMITTED, "working"),
        (TaskState.TASK_STATE_WORKING, "working"),
        (TaskState.TASK_STATE_INPUT_REQUIRED, "input_required"),
        (TaskState.TASK_STATE_AUTH_REQUIRED, "input_required"),
        (TaskState.TASK_STATE_COMPLETED, "completed"),
        (TaskState.TASK_STATE_FAILED, "failed"),
        (TaskState.TASK_STATE_REJECTED, "failed"),
        (TaskState.TASK_STATE_CANCELED, "cancelled"),
        (TaskState.TASK_STATE_UNSPECIFIED, "working"),
    ],
)
def test_each_a2a_task_state_has_an_mcp_task_status(state: TaskState, expected: str) -> None:
    assert mcp_status(state) == expected


def test_a_rejected_or_sign_in_task_says_so_in_its_status_message() -> None:
    said = Message(parts=[Part(text="Not on Sundays.")])
    rejected = Task(status=TaskStatus(state=TaskState.TASK_STATE_REJECTED, message=said))
    sign_in = Task(status=TaskStatus(state=TaskState.TASK_STATE_AUTH_REQUIRED))
    working = Task(status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    assert status_message(rejected) == "The agent rejected the task: Not on Sundays."
    assert status_message(sign_in) == "The agent needs the user to sign in to it"
    assert status_message(working) is None


async def test_a_task_augmented_call_answers_at_once_and_its_status_and_result_follow_the_agent() -> None:
    proceed = asyncio.Event()
    executor = TravelExecutor(proceed)
    async with travel_gateway(executor, "legacy") as (_, client):
        tasks = client.server_capabilities.tasks
        assert tasks is not None and tasks.requests is not None and tasks.requests.tools is not None
        tool = {t.name: t for t in (await client.list_tools()).tools}["travel__plan_trip"]
        assert tool.execution is not None and tool.execution.task_support == "optional"

        created = await start(client, "travel__plan_trip", "three days in Lisbon")
        assert created.task_id.startswith("travel."), created.task_id
        assert created.status == "working"
        # The agent waits for ``proceed``: the task answered before the work was done.
        assert not proceed.is_set()

        with anyio.fail_after(DEADLINE):
            await executor.started.wait()
        working = await status_once(client, created.task_id, "Looking at the map")
        assert working.status == "working"
        listed = types.ListTasksResult.model_validate(await raw(client, "tasks/list", {}))
        assert created.task_id in [task.task_id for task in listed.tasks]

        proceed.set()
        payload = await raw(client, "tasks/result", {"taskId": created.task_id})
        result = types.CallToolResult.model_validate(payload)
        done = await status(client, created.task_id)
    assert not result.is_error
    assert [block.text for block in result.content] == ["Itinerary for: three days in Lisbon"]  # type: ignore[union-attr]
    assert result.structured_content == {"days": 3, "city": "Lisbon"}
    assert payload["_meta"][RELATED_TASK] == {"taskId": created.task_id}
    assert done.status == "completed"


async def test_a_failed_agent_task_is_a_failed_mcp_task_with_the_agents_reason() -> None:
    async with travel_gateway(TravelExecutor(), "legacy") as (_, client):
        created = await start(client, "travel__book_flight", "LIS to OSL")
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": created.task_id}))
        failed = await status(client, created.task_id)
    assert result.is_error
    assert result.content[0].text == "The agent's task failed: No seats left on that flight."  # type: ignore[union-attr]
    assert failed.status == "failed"
    assert failed.status_message == "No seats left on that flight."


async def test_cancelling_the_mcp_task_cancels_the_agents_task() -> None:
    executor = TravelExecutor(asyncio.Event())  # never set: the task works until cancelled
    async with travel_gateway(executor, "legacy") as (_, client):
        created = await start(client, "travel__plan_trip", "a week in Oslo")
        with anyio.fail_after(DEADLINE):
            await executor.started.wait()
        cancelled = types.CancelTaskResult.model_validate(
            await raw(client, "tasks/cancel", {"taskId": created.task_id})
        )
        after = await status(client, created.task_id)
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": created.task_id}))
    assert cancelled.task_id == created.task_id
    assert cancelled.status == "cancelled"
    assert after.status == "cancelled"
    assert after.status_message == "Cancelled at the traveller's request."
    assert result.is_error
    assert result.content[0].text == "The agent's task was cancelled: Cancelled at the traveller's request."  # type: ignore[union-attr]


async def test_an_agent_that_answers_with_a_message_gives_a_completed_task() -> None:
    async with travel_gateway(TravelExecutor(), "legacy") as (_, client):
        created = await start(client, "travel__greet", "hi there")
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": created.task_id}))
        with pytest.raises(MCPError) as caught:
            await raw(client, "tasks/cancel", {"taskId": created.task_id})
    assert created.status == "completed"
    assert [block.text for block in result.content] == ["Hello! You said: hi there"]  # type: ignore[union-attr]
    assert "has already completed" in caught.value.error.message


async def test_an_agent_task_the_agent_does_not_know_gets_a_clear_error() -> None:
    async with travel_gateway(TravelExecutor(), "legacy") as (_, client):
        with pytest.raises(MCPError) as caught:
            await raw(client, "tasks/get", {"taskId": "travel.no-such-task"})
    assert caught.value.error.code == types.INVALID_PARAMS
    assert caught.value.error.message == "travel: Task not found: no-such-task"


async def test_a_task_augmented_call_without_its_message_is_refused_naming_the_argument() -> None:
    async with travel_gateway(TravelExecutor(), "legacy") as (_, client):
        with pytest.raises(MCPError) as caught:
            await raw(client, "tools/call", {"name": "travel__plan_trip", "arguments": {}, "task": {}})
    assert caught.value.error.code == types.INVALID_PARAMS
    assert "missing required argument: message" in caught.value.error.message


async def test_a_modern_client_gets_no_task_but_the_answer_with_its_progress() -> None:
    proceed = asyncio.Event()
    seen: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        proceed.set()

    async with travel_gateway(TravelExecutor(proceed), "auto") as (_, client):
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tasks is None
        with anyio.fail_after(DEADLINE):
            answer = await client.call_tool(
                "travel__plan_trip", {"message": "three days in Lisbon"}, progress_callback=progress
            )
    assert seen == ["Looking at the map", "Choosing hotels"]
    assert [block.text for block in answer.content] == ["Itinerary for: three days in Lisbon"]  # type: ignore[union-attr]


async def test_an_agent_that_does_not_stream_is_followed_by_reading_its_task() -> None:
    proceed = asyncio.Event()
    executor = TravelExecutor(proceed)
    async with (
        serve_built(lambda url: build_agent_app(url, executor, streaming=False)) as base,
        running_gateway(settings_for(ServerConfig(name="travel", transport="a2a", base_url=base)), mode="legacy") as (
            _,
            client,
        ),
    ):
        created = await start(client, "travel__plan_trip", "a weekend in Porto")
        with anyio.fail_after(DEADLINE):
            await executor.started.wait()
        proceed.set()
        result = types.CallToolResult.model_validate(await raw(client, "tasks/result", {"taskId": created.task_id}))
    assert [block.text for block in result.content] == ["Itinerary for: a weekend in Porto"]  # type: ignore[union-attr]
