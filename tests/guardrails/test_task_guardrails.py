"""2025-11-25 tasks under the guardrails: a task-augmented call's arguments go upstream as
the rules leave them, and its result (``tasks/result``) is judged like a tool's result.
A real upstream (npm ``server-everything``'s research task) through the gateway's ``/mcp``
over real HTTP, to a real SDK client at the handshake era."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
from fastapi import FastAPI
from mcp import Client

from mcp_aggregator.guardrails import GuardrailRule
from tests.admin.conftest import served_app
from tests.conftest import npm_server
from tests.relay.test_tasks_relayed import DEADLINE, TOOL, raw
from tests.serve.http_face import face_settings, http_face

RULES = (
    GuardrailRule.model_validate(
        {"name": "topic", "kind": "pattern", "patterns": ["SECRETTOPIC"], "on": ["arguments"]}
    ),
    GuardrailRule.model_validate({"name": "masked", "kind": "pattern", "patterns": ["MASKME"], "on": ["results"]}),
    GuardrailRule.model_validate(
        {"name": "stopped", "kind": "pattern", "patterns": ["BLOCKME"], "on": ["results"], "action": "block"}
    ),
)


async def task_result(client: Client, topic: str) -> dict[str, Any]:
    answer = await raw(client, "tools/call", {"name": TOOL, "arguments": {"topic": topic}, "task": {}})
    created = types.CreateTaskResult.model_validate(answer)
    payload = await raw(client, "tasks/result", {"taskId": created.task.task_id})
    related = (payload.get("_meta") or {}).get("io.modelcontextprotocol/related-task")
    assert related is None or related["taskId"] == created.task.task_id
    return payload


async def test_a_tasks_arguments_are_masked_upstream_and_its_result_is_masked_or_blocked(tmp_path: Path) -> None:
    settings = face_settings(tmp_path, npm_server("everything", "mcp-server-everything", "stdio"))
    settings = settings.model_copy(update={"guardrails": RULES})
    async with http_face(settings) as face:
        await face.gateway.wait_settled(DEADLINE)
        async with Client(face.mcp_url, mode="legacy", cache=None) as client:
            masked = types.CallToolResult.model_validate(await task_result(client, "MASKME SECRETTOPIC"))
            blocked = types.CallToolResult.model_validate(await task_result(client, "BLOCKME"))
        counts = dict(face.gateway.guard.counts)

    text = masked.content[0].text  # type: ignore[union-attr]
    # The upstream wrote the topic it got into its report: the masked one.
    assert "[REDACTED:masked] [REDACTED:topic]" in text, text
    assert "SECRETTOPIC" not in text and "MASKME" not in text
    assert blocked.is_error
    [block] = blocked.content
    assert block.text.startswith("Blocked by guardrail 'stopped' (pattern) found stopped in the result")  # type: ignore[union-attr]
    assert counts == {
        ("topic", "mask", "pattern", "arguments"): 1,
        ("masked", "mask", "pattern", "results"): 1,
        ("stopped", "block", "pattern", "results"): 1,
    }


async def test_a_webhook_rule_judges_a_tasks_result(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/verdict")
    async def verdict(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        if "DENYME" in body["result"]["content"][0]["text"]:
            return {"decision": "deny", "reason": "not this report"}
        return {"decision": "allow"}

    async with served_app(app) as base:
        hook = {"name": "hook", "kind": "webhook", "url": f"{base}/verdict", "action": "block"}
        settings = face_settings(tmp_path, npm_server("everything", "mcp-server-everything", "stdio"))
        settings = settings.model_copy(update={"guardrails": (GuardrailRule.model_validate(hook),)})
        async with http_face(settings) as face:
            await face.gateway.wait_settled(DEADLINE)
            async with Client(face.mcp_url, mode="legacy", cache=None) as client:
                denied = types.CallToolResult.model_validate(await task_result(client, "DENYME"))

    assert denied.is_error
    assert "guardrail 'hook' (webhook) found denied in the result: not this report" in denied.content[0].text  # type: ignore[union-attr]
    [asked] = [body for body in seen if body["method"] == "tasks/result"]
    assert (asked["where"], asked["server"]) == ("results", "everything")
