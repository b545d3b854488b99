"""2025-11-25 tasks, relayed to the upstream that runs them.

A client asks for a task by adding ``task`` to ``tools/call``; the owning upstream answers
``CreateTaskResult`` and runs the tool on. The id the client sees is the upstream's prefixed
with the server's name (``<server>.<id>``; server names hold no dot), so ids of several
upstreams never clash and ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` find their
upstream by the id alone, with no table to keep. Every request goes through the pipeline's
stages (policies, audit, metrics) like any other.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types

from mcp_aggregator.errors import TaskNotFoundError
from mcp_aggregator.relay.caller import NO_CALLER, Caller
from mcp_aggregator.relay.pipeline import CallPipeline, Invocation, Routes
from mcp_aggregator.upstreams.task_requests import send_task_request
from mcp_aggregator.upstreams.wire_checks import upstream_meta

TASK_METHODS: Final = ("tasks/get", "tasks/result", "tasks/cancel")
"""The requests that name one task (``tasks/list`` names none)."""

RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"
_MAX_LIST_PAGES: Final = 100
"""Pages read from one upstream for ``tasks/list`` (a loop guard against a cursor that never ends)."""


def client_task_id(server: str, upstream_id: str) -> str:
    """The id a client sees for ``server``'s task ``upstream_id``."""
    return f"{server}.{upstream_id}"


def owner_of(task_id: str) -> tuple[str, str]:
    """The server and its own id behind a client's task id. Raises ``TaskNotFoundError``."""
    server, dot, upstream_id = task_id.partition(".")
    if not dot or not server or not upstream_id:
        raise TaskNotFoundError(task_id)
    return server, upstream_id


def with_client_ids(server: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` (a task result of ``server``) with every task id it carries made the client's:
    ``taskId`` (a task), ``task.taskId`` (``CreateTaskResult``), ``tasks[].taskId``
    (``tasks/list``) and the related-task ``_meta`` of a ``tasks/result`` payload."""
    out = dict(payload)
    if isinstance(out.get("taskId"), str):
        out["taskId"] = client_task_id(server, out["taskId"])
    task = out.get("task")
    if isinstance(task, dict):
        out["task"] = with_client_ids(server, task)
    tasks = out.get("tasks")
    if isinstance(tasks, list):
        out["tasks"] = [with_client_ids(server, t) if isinstance(t, dict) else t for t in tasks]
    meta = out.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get(RELATED_TASK_KEY), dict):
        out["_meta"] = {**meta, RELATED_TASK_KEY: with_client_ids(server, meta[RELATED_TASK_KEY])}
    return out


class TaskRelay:
    """Task-augmented calls and the ``tasks/*`` requests, routed by server and task id."""

    def __init__(self, pipeline: CallPipeline, routes: Routes) -> None:
        self._pipeline = pipeline
        self._routes = routes

    def servers(self) -> list[str]:
        """Exposed servers that declared the 2025-11-25 ``tasks`` capability."""
        return self._routes.servers_with("tasks")

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        task: Mapping[str, Any],
        *,
        caller: Caller = NO_CALLER,
        meta: types.RequestParamsMeta | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` with ``task``: the upstream's ``CreateTaskResult``, its id the client's.
        Raises routing and ``UpstreamError``s (the upstream's own when it runs no tasks)."""
        route = self._routes.resolve(name)
        conn = self._routes.connection(route.server)
        # The very dict the stages judge: a guardrail masks it in place, and the masked
        # arguments are what goes upstream.
        sent = dict(arguments or {})
        params: dict[str, Any] = {"name": route.tool, "arguments": sent, "task": dict(task)}
        outgoing = upstream_meta(self._pipeline.outgoing(meta), modern=False)
        if outgoing:
            params["_meta"] = dict(outgoing)
        invocation = Invocation("tools/call", route.server, route.tool, caller, route, sent)
        result: dict[str, Any] = await self._pipeline.through(
            invocation, lambda: send_task_request(conn, "tools/call", params, tag=caller)
        )
        return with_client_ids(route.server, result)

    async def request(self, method: str, task_id: str, *, caller: Caller = NO_CALLER) -> dict[str, Any]:
        """``tasks/get``, ``tasks/result`` or ``tasks/cancel`` for the client's ``task_id``, sent to
        its upstream. Raises ``TaskNotFoundError`` for an id no tasks-capable exposed server
        could have given, ``UpstreamError``s."""
        server, upstream_id = owner_of(task_id)
        if server not in self.servers():
            raise TaskNotFoundError(task_id)
        conn = self._routes.connection(server)
        invocation = Invocation(method, server, upstream_id, caller)
        result: dict[str, Any] = await self._pipeline.through(
            invocation, lambda: send_task_request(conn, method, {"taskId": upstream_id}, tag=caller)
        )
        return with_client_ids(server, result)

    async def list_tasks(self, *, caller: Caller = NO_CALLER) -> dict[str, Any]:
        """Every exposed upstream's tasks (those that declared ``tasks.list``), in one page."""
        tasks: list[Any] = []
        for server in self.servers():
            conn = self._routes.connection(server)
            caps = conn.capabilities
            if caps is None or caps.tasks is None or caps.tasks.list is None:
                continue
            cursor: str | None = None
            for _ in range(_MAX_LIST_PAGES):
                params = {} if cursor is None else {"cursor": cursor}
                invocation = Invocation("tasks/list", server, cursor or "", caller)
                page: dict[str, Any] = await self._pipeline.through(
                    invocation, functools.partial(send_task_request, conn, "tasks/list", params, tag=caller)
                )
                tasks.extend(with_client_ids(server, page).get("tasks") or [])
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str):
                    break
        return {"tasks": tasks}
