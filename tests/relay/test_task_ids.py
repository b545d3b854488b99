"""How the gateway names an upstream's tasks to its clients, and reads the names back."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import TaskNotFoundError
from mcp_aggregator.relay.task_relay import client_task_id, owner_of, with_client_ids


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
