"""An A2A agent's answer as a tool result (pure): text parts as text, data parts as
structured content, files as resources; a failed, rejected or cancelled task a tool error."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import mcp_types as types
from a2a.types import Message, Part, Task, TaskState
from google.protobuf.json_format import MessageToDict

_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "was rejected",
    TaskState.TASK_STATE_CANCELED: "was cancelled",
}
_WAITING = {
    TaskState.TASK_STATE_INPUT_REQUIRED: "needs more input (answer with this task_id and context_id)",
    TaskState.TASK_STATE_AUTH_REQUIRED: "needs the user to sign in to the agent",
}


def _content(part: Part, data: list[Any]) -> types.ContentBlock | None:
    kind = part.WhichOneof("content")
    if kind == "text":
        return types.TextContent(text=part.text)
    if kind == "data":
        data.append(MessageToDict(part.data))
        return None
    media = part.media_type or "application/octet-stream"
    if kind == "url":
        return types.ResourceLink(uri=part.url, name=part.filename or part.url, mime_type=media)
    if kind == "raw":
        blob = base64.b64encode(part.raw).decode()
        uri = f"a2a-file:///{part.filename or 'file'}"
        return types.EmbeddedResource(resource=types.BlobResourceContents(uri=uri, mime_type=media, blob=blob))
    return None


def reply_result(
    parts: Iterable[Part], *, is_error: bool = False, meta: dict[str, Any] | None = None
) -> types.CallToolResult:
    data: list[Any] = []
    content = [block for part in parts if (block := _content(part, data)) is not None]
    structured: dict[str, Any] | None = None
    if len(data) == 1 and isinstance(data[0], dict):
        structured = data[0]
    elif data:
        structured = {"data": data}
    return types.CallToolResult(
        content=content or [types.TextContent(text="(the agent answered with no content)")],
        structured_content=structured,
        is_error=is_error,
        meta=meta,
    )


def message_result(message: Message) -> types.CallToolResult:
    meta = {"a2a": {"context_id": message.context_id}} if message.context_id else None
    return reply_result(message.parts, meta=meta)


def task_result(task: Task) -> types.CallToolResult:
    """A finished (or waiting) task: its artifacts' parts, else its status message's."""
    state = task.status.state
    meta = {"a2a": {"task_id": task.id, "context_id": task.context_id, "state": TaskState.Name(state)}}
    status_parts = list(task.status.message.parts) if task.status.HasField("message") else []
    if state in _FAILED:
        why = " ".join(p.text for p in status_parts if p.WhichOneof("content") == "text") or "no reason given"
        return reply_result([], is_error=True, meta=meta).model_copy(
            update={"content": [types.TextContent(text=f"The agent's task {_FAILED[state]}: {why}")]}
        )
    parts = [part for artifact in task.artifacts for part in artifact.parts] or status_parts
    result = reply_result(parts, meta=meta)
    if state in _WAITING:
        note = types.TextContent(text=f"The agent {_WAITING[state]}: task_id={task.id} context_id={task.context_id}")
        result = result.model_copy(update={"content": [*result.content, note]})
    return result
