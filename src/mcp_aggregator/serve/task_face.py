"""2025-11-25 tasks on the SDK server clients talk to: the capability, the task-augmented
``tools/call`` and the ``tasks/*`` requests, all handed to the relay's ``TaskRelay``.

The SDK's server shapes every ``tools/call`` answer as a ``CallToolResult`` at the
negotiated version, does not dispatch ``tasks/*`` as spec methods and never declares
``tasks``; so a server middleware takes a task-augmented call before that shaping and adds
the capability to each ``initialize`` answer, and ``tasks/*`` are registered as custom
methods. Both are for handshake-era clients only: tasks left the core protocol at
2026-07-28, and a modern client's ``task`` param is ignored as the SDK ignores it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from mcp_aggregator.errors import AggregatorError, ToolNotFoundError
from mcp_aggregator.relay import Caller
from mcp_aggregator.relay.task_relay import TaskRelay
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.upstreams.wire_checks import check_encodable

CallerOf = Callable[[ServerRequestContext[Any]], Caller]
MetaOf = Callable[[ServerRequestContext[Any]], types.RequestParamsMeta | None]

_TASK_REQUESTS: dict[str, type[BaseModel]] = {
    "tasks/get": types.GetTaskRequestParams,
    "tasks/result": types.GetTaskPayloadRequestParams,
    "tasks/cancel": types.CancelTaskRequestParams,
}


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


class TaskFace:
    """Serves tasks for ``relay`` on one SDK server (``install``)."""

    def __init__(
        self,
        relay: TaskRelay,
        *,
        caller_of: CallerOf,
        meta_of: MetaOf,
        canonical_of: Callable[[str], Awaitable[str | None]],
    ) -> None:
        """``caller_of``/``meta_of``: the request's ``Caller`` and its ``_meta`` as it goes upstream;
        ``canonical_of``: the canonical name of a tool the surface serves under a name (None: none)."""
        self.relay = relay
        self._caller_of = caller_of
        self._meta_of = meta_of
        self._canonical_of = canonical_of

    def install(self, server: Server[Any]) -> None:
        server.middleware.append(self._middleware)
        for method, params_type in _TASK_REQUESTS.items():
            server.add_request_handler(method, params_type, self._one_task)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self._list)

    def capability(self) -> types.ServerTasksCapability | None:
        """What to declare to a handshake-era client: ``tools/call`` as a task, list and cancel,
        while at least one exposed upstream declares tasks; None otherwise."""
        if not self.relay.servers():
            return None
        call = types.ServerTasksRequestsCapability(tools=types.TasksToolsCapability(call=types.TasksCallCapability()))
        return types.ServerTasksCapability(
            list=types.TasksListCapability(), cancel=types.TasksCancelCapability(), requests=call
        )

    async def _middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            return self._with_capability(await call_next(ctx))
        return await self._task_call(ctx, call_next)

    def _with_capability(self, result: HandlerResult) -> HandlerResult:
        """An ``initialize`` answer with ``tasks`` declared when ``capability`` gives it (decided
        now, per client, not when the server was built)."""
        if not isinstance(result, dict) or result.get("protocolVersion") in MODERN_PROTOCOL_VERSIONS:
            return result
        caps, tasks = result.get("capabilities"), self.capability()
        if not isinstance(caps, dict) or tasks is None:
            return result
        declared = tasks.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {**result, "capabilities": {**caps, "tasks": declared}}

    async def _task_call(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        raw = ctx.params
        if ctx.method != "tools/call" or not isinstance(raw, Mapping) or raw.get("task") is None or _modern(ctx):
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise MCPError(types.INVALID_PARAMS, f"Invalid params: {where}: {first['msg']}") from exc
        assert params.task is not None
        try:
            check_encodable(params.arguments, "arguments")
            canonical = await self._canonical_of(params.name)
            if canonical is None:
                raise ToolNotFoundError(params.name)
            return await self.relay.call_tool(
                canonical,
                params.arguments,
                params.task.model_dump(mode="json", by_alias=True, exclude_none=True),
                caller=self._caller_of(ctx),
                meta=self._meta_of(ctx),
            )
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc

    async def _one_task(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        if _modern(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)
        try:
            return await self.relay.request(ctx.method, params.task_id, caller=self._caller_of(ctx))
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc

    async def _list(self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        if _modern(ctx):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)
        try:
            return await self.relay.list_tasks(caller=self._caller_of(ctx))
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc
