"""An A2A agent's tasks as 2025-11-25 MCP tasks, on the bridge's server.

A task-augmented ``tools/call`` sends the message with A2A's ``return_immediately`` and
answers ``CreateTaskResult`` with the agent's own task id, so ``tasks/get``, ``tasks/result``,
``tasks/cancel`` and ``tasks/list`` are each one A2A request (``GetTask``, ``SubscribeToTask``,
``CancelTask``, ``ListTasks``) and the bridge keeps no task table: the agent is the record.
An agent that answers at once with a message (no task) gets a finished task of the bridge's
own (``reply-...``), kept for ``tasks/result`` among the last ``KEPT_REPLIES``.

The SDK's low-level server never declares ``tasks`` nor dispatches ``tasks/*``; as on the
gateway's own face (``serve.task_face``), a middleware adds the capability to ``initialize``
and takes the task-augmented call, and ``tasks/*`` are custom methods. The gateway talks to
the bridge at 2025-11-25 (``bridges.bridge_target``) so its task relay reaches them.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import httpx
import mcp_types as types
from a2a.client.client import Client as A2AClient
from a2a.client.client import ClientCallContext
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
)
from a2a.utils.errors import A2AError, TaskNotCancelableError, TaskNotFoundError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mcp_aggregator.bridges.a2a.agent_reply import message_result, task_result
from mcp_aggregator.bridges.a2a.task_status import WAITING, mcp_status, mcp_task

POLL_INTERVAL_MS: Final = 1000
"""Suggested to clients, and the bridge's own pace with an agent that cannot stream."""
KEPT_REPLIES: Final = 256
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
REPLY_PREFIX: Final = "reply-"

MessageFor = Callable[[types.CallToolRequestParams], Message]
"""The A2A message a call asks to send; raises ``MCPError`` (INVALID_PARAMS) for bad arguments."""
ContextFor = Callable[[str | None], ClientCallContext | None]
"""The credentials a request for a tool (None: a task request) carries; raises ``MCPError``."""


@dataclass(frozen=True)
class Agents:
    """The agent's clients: one that streams (``streams``: the card allows it) and one that
    sends with ``return_immediately``."""

    streaming: A2AClient
    polling: A2AClient
    streams: bool


@dataclass(frozen=True)
class _Reply:
    task: types.Task
    result: types.CallToolResult


def _wire(task: types.Task) -> dict[str, Any]:
    """``task`` as sent: ``ttl`` is required on the wire even when it is null (no expiry)."""
    return {**task.model_dump(mode="json", by_alias=True, exclude_none=True), "ttl": task.ttl}


def _agent_error(exc: Exception, task_id: str = "") -> MCPError:
    if isinstance(exc, TaskNotFoundError):
        return MCPError(types.INVALID_PARAMS, f"Task not found: {task_id}")
    if isinstance(exc, TaskNotCancelableError):
        return MCPError(types.INVALID_PARAMS, f"Task {task_id} can no longer be cancelled: {exc}")
    return MCPError(types.INTERNAL_ERROR, f"The agent could not be reached or refused: {exc or type(exc).__name__}")


class AgentTasks:
    """Serves one agent's tasks on a bridge server (``install``); ``agents`` is set once the
    card is read, and again when it changes."""

    def __init__(
        self, message_for: MessageFor, context_for: ContextFor, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.agents: Agents | None = None
        self._message_for = message_for
        self._context_for = context_for
        self._clock = clock or (lambda: datetime.now(UTC))
        self._created: OrderedDict[str, datetime] = OrderedDict()
        self._replies: OrderedDict[str, _Reply] = OrderedDict()

    def install(self, server: Server[Any]) -> None:
        server.middleware.append(self._middleware)
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self._get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self._result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self._cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)

    @staticmethod
    def capability() -> types.ServerTasksCapability:
        call = types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability()))
        return types.ServerTasksCapability(
            list=types.TasksListCapability(), cancel=types.TasksCancelCapability(), requests=call
        )

    def _agents(self) -> Agents:
        if self.agents is None:
            raise MCPError(types.INTERNAL_ERROR, "the agent card has not been read")
        return self.agents

    async def _middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            result = await call_next(ctx)
            if isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
                tasks = self.capability().model_dump(mode="json", by_alias=True, exclude_none=True)
                return {**result, "capabilities": {**result["capabilities"], "tasks": tasks}}
            return result
        raw = ctx.params
        if ctx.method == "tools/call" and isinstance(raw, Mapping) and raw.get("task") is not None:
            try:
                params = types.CallToolRequestParams.model_validate(raw, by_name=False)
            except ValidationError as exc:
                raise MCPError(types.INVALID_PARAMS, f"Invalid params: {exc.errors()[0]['msg']}") from exc
            return {"task": _wire(await self.start(params))}
        return await call_next(ctx)

    async def start(self, params: types.CallToolRequestParams) -> types.Task:
        """Sends the call's message with ``return_immediately``; the agent's task, as it stands."""
        message = self._message_for(params)
        context = self._context_for(params.name)
        request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=True))
        now = self._clock()
        try:
            async for event in self._agents().polling.send_message(request, context=context):
                if event.HasField("message"):
                    return self._keep_reply(event.message, now)
                if event.HasField("task"):
                    self._remember(event.task.id, now)
                    return self._task(event.task)
        except (A2AError, httpx.HTTPError) as exc:
            raise _agent_error(exc) from exc
        raise MCPError(types.INTERNAL_ERROR, "The agent ended the exchange without an answer")

    def _keep_reply(self, message: Message, now: datetime) -> types.Task:
        task = types.Task(
            task_id=f"{REPLY_PREFIX}{uuid.uuid4().hex}",
            status="completed",
            created_at=now.isoformat(),
            last_updated_at=now.isoformat(),
            ttl=None,
        )
        self._replies[task.task_id] = _Reply(task, message_result(message))
        while len(self._replies) > KEPT_REPLIES:
            self._replies.popitem(last=False)
        return task

    def _remember(self, task_id: str, now: datetime) -> None:
        self._created[task_id] = now
        self._created.move_to_end(task_id)
        while len(self._created) > KEPT_REPLIES * 4:
            self._created.popitem(last=False)

    def _task(self, task: Task) -> types.Task:
        created = self._created.get(task.id) or self._clock()
        return mcp_task(task, task.id, created_at=created, poll_interval_ms=POLL_INTERVAL_MS)

    async def _fetch(self, task_id: str) -> Task:
        try:
            return await self._agents().polling.get_task(GetTaskRequest(id=task_id), context=self._context_for(None))
        except (A2AError, httpx.HTTPError) as exc:
            raise _agent_error(exc, task_id) from exc

    async def _get(self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> dict[str, Any]:
        reply = self._replies.get(params.task_id)
        return _wire(reply.task if reply is not None else self._task(await self._fetch(params.task_id)))

    async def _result(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        """The agent's reply once its task ended, or stopped to wait for the user (then the
        note that names the ids to answer with, as a plain call gives)."""
        reply = self._replies.get(params.task_id)
        result = reply.result if reply is not None else task_result(await self._settled(params.task_id))
        payload = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        payload["_meta"] = {**(payload.get("_meta") or {}), RELATED_TASK: {"taskId": params.task_id}}
        return payload

    async def _settled(self, task_id: str) -> Task:
        """The task once ``WAITING``: followed by the agent's stream where it streams, else polled."""
        while True:
            task = await self._fetch(task_id)
            if mcp_status(task.status.state) in WAITING:
                return task
            agents = self._agents()
            if not agents.streams:
                await anyio.sleep(POLL_INTERVAL_MS / 1000)
                continue
            try:
                request = SubscribeToTaskRequest(id=task_id)
                async for event in agents.streaming.subscribe(request, context=self._context_for(None)):
                    state = event.status_update.status.state if event.HasField("status_update") else None
                    if event.HasField("task"):
                        state = event.task.status.state
                    if state is not None and mcp_status(state) in WAITING:
                        break
            except (A2AError, httpx.HTTPError):
                # It ended between the read and the subscription (the agent refuses to stream a
                # finished task), or the stream broke: the next read, a pace later, tells which.
                await anyio.sleep(POLL_INTERVAL_MS / 1000)

    async def _cancel(self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams) -> dict[str, Any]:
        if params.task_id in self._replies:
            raise MCPError(types.INVALID_PARAMS, f"Task {params.task_id} has already completed")
        try:
            request = CancelTaskRequest(id=params.task_id)
            task = await self._agents().polling.cancel_task(request, context=self._context_for(None))
        except (A2AError, httpx.HTTPError) as exc:
            raise _agent_error(exc, params.task_id) from exc
        return _wire(self._task(task))

    async def _list(self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        request = ListTasksRequest(page_token=params.cursor or "")
        try:
            page = await self._agents().polling.list_tasks(request, context=self._context_for(None))
        except (A2AError, httpx.HTTPError) as exc:
            raise _agent_error(exc) from exc
        tasks = [reply.task for reply in self._replies.values()] if params.cursor is None else []
        tasks += [self._task(task) for task in page.tasks]
        listed: dict[str, Any] = {"tasks": [_wire(task) for task in tasks]}
        if page.next_page_token:
            listed["nextCursor"] = page.next_page_token
        return listed
