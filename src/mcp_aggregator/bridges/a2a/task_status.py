"""An A2A task's state as an MCP task's status (pure).

MCP's task statuses are fewer than A2A's states, so some meet:

| A2A state | MCP status | statusMessage |
| --- | --- | --- |
| submitted, working (and unspecified) | working | the agent's status message |
| input-required | input_required | the agent's question |
| auth-required | input_required | "The agent needs the user to sign in to it" (+ the agent's words) |
| completed | completed | the agent's final status message |
| failed | failed | the agent's reason |
| rejected | failed | "The agent rejected the task" (+ the agent's words) |
| canceled | cancelled | the agent's words |

``submitted`` is work accepted but not begun, which an MCP client cannot act on any
differently from ``working``; ``rejected`` is a task that ends without a result, as a failure
does; ``auth-required`` is, like ``input-required``, a task that waits for the user.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import mcp_types as types
from a2a.types import Task, TaskState

_STATUS: Final[dict[int, types.TaskStatus]] = {
    TaskState.TASK_STATE_SUBMITTED: "working",
    TaskState.TASK_STATE_WORKING: "working",
    TaskState.TASK_STATE_INPUT_REQUIRED: "input_required",
    TaskState.TASK_STATE_AUTH_REQUIRED: "input_required",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "failed",
    TaskState.TASK_STATE_CANCELED: "cancelled",
}
_PREFIX: Final[dict[int, str]] = {
    TaskState.TASK_STATE_AUTH_REQUIRED: "The agent needs the user to sign in to it",
    TaskState.TASK_STATE_REJECTED: "The agent rejected the task",
}
ENDED: Final = frozenset({"completed", "failed", "cancelled"})
"""MCP statuses after which a task changes no more."""
WAITING: Final = frozenset({*ENDED, "input_required"})
"""Statuses at which ``tasks/result`` answers: the task ended or waits for the user."""


def mcp_status(state: int) -> types.TaskStatus:
    return _STATUS.get(state, "working")


def status_message(task: Task) -> str | None:
    """The agent's words on the task's status (its text parts), after a note where the state
    says more than the MCP status can."""
    said = ""
    if task.status.HasField("message"):
        said = " ".join(part.text for part in task.status.message.parts if part.text)
    prefix = _PREFIX.get(task.status.state)
    if prefix is not None:
        return f"{prefix}: {said}" if said else prefix
    return said or None


def mcp_task(task: Task, task_id: str, *, created_at: datetime, poll_interval_ms: int) -> types.Task:
    """``task`` as MCP tells it, under ``task_id``; ``created_at`` when the gateway asked for it."""
    updated = task.status.timestamp.ToDatetime(tzinfo=UTC) if task.status.HasField("timestamp") else created_at
    return types.Task(
        task_id=task_id,
        status=mcp_status(task.status.state),
        status_message=status_message(task),
        created_at=created_at.isoformat(),
        last_updated_at=max(updated, created_at).isoformat(),
        ttl=None,
        poll_interval=poll_interval_ms,
    )
