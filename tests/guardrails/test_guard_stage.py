"""The stage judges a result model (full pipeline) and the raw answer (fast path) alike,
masks arguments in place, and refuses what a ``block`` rule finds."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import orjson
import pytest

from mcp_aggregator.errors import GuardrailBlockedError
from mcp_aggregator.guardrails import GuardrailRule
from mcp_aggregator.guardrails.guard import Guard
from mcp_aggregator.guardrails.guard_stage import GuardStage
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, Invocation
from tests.guardrails.leaky_server import AWS_ACCESS_KEY, INJECTED

RULES = [
    GuardrailRule.model_validate({"name": "secrets", "kind": "secrets", "on": ["results", "arguments"]}),
    GuardrailRule.model_validate({"name": "mail", "kind": "pii", "entities": ["EMAIL_ADDRESS"], "action": "flag"}),
    GuardrailRule.model_validate({"name": "poison", "kind": "injection", "action": "block"}),
]


def invocation(method: str = "tools/call", arguments: dict[str, Any] | None = None) -> Invocation:
    return Invocation(method, "srv", "tool", Caller(identity=ClientIdentity(profile="default")), None, arguments)


def both_ways(result: types.CallToolResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The screened result as the full pipeline and as the fast path give it (wire JSON)."""
    stage = GuardStage(Guard(RULES))
    model = stage.screen(invocation(), result)
    wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    line = orjson.dumps({"jsonrpc": "2.0", "id": "agw:1", "result": wire})
    raw = orjson.loads(stage.screen(invocation(), line))["result"]
    return model.model_dump(mode="json", by_alias=True, exclude_none=True), raw


CASES = [
    types.CallToolResult(content=[types.TextContent(type="text", text="nothing here")]),
    types.CallToolResult(
        content=[types.TextContent(type="text", text=f'{{"key": "{AWS_ACCESS_KEY}"}}')],
        structured_content={"key": AWS_ACCESS_KEY, "nested": [{"mail": "a@b.example.org"}]},
    ),
    types.CallToolResult(content=[types.TextContent(type="text", text=INJECTED)]),
    types.CallToolResult(
        content=[types.ImageContent(type="image", data="QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", mime_type="image/png")]
    ),
]


@pytest.mark.parametrize("result", CASES)
def test_the_model_and_the_raw_answer_are_screened_alike(result: types.CallToolResult) -> None:
    model, raw = both_ways(result)
    assert model == raw


def test_a_masked_structured_result_stays_valid_and_names_the_kind() -> None:
    model, _ = both_ways(CASES[1])
    assert model["structuredContent"] == {"key": "[REDACTED:aws_access_key]", "nested": [{"mail": "a@b.example.org"}]}
    assert orjson.loads(model["content"][0]["text"]) == {"key": "[REDACTED:aws_access_key]"}


def test_a_raw_answer_without_a_hint_is_passed_on_as_the_same_bytes() -> None:
    line = b'{"jsonrpc":"2.0","id":"agw:1","result":{"content":[{"type":"text","text":"plain"}]}}'
    assert GuardStage(Guard(RULES)).screen(invocation(), line) is line


def test_arguments_are_masked_in_place_before_they_leave() -> None:
    arguments = {"text": f"key {AWS_ACCESS_KEY}", "n": 3}
    GuardStage(Guard(RULES)).admit(invocation(arguments=arguments))
    assert arguments == {"text": "key [REDACTED:aws_access_key]", "n": 3}


def test_a_blocked_prompt_or_resource_is_refused_naming_the_rule_not_the_value() -> None:
    result = types.ReadResourceResult(contents=[types.TextResourceContents(uri="notes://x", text=INJECTED)])
    with pytest.raises(GuardrailBlockedError) as info:
        GuardStage(Guard(RULES)).screen(invocation("resources/read"), result)
    assert info.value.rule == "poison"
    assert "injection" in str(info.value) and "id_rsa" not in str(info.value)


def test_flag_passes_the_value_and_records_the_decision() -> None:
    heard: list[Any] = []
    stage = GuardStage(Guard(RULES), lambda inv, decisions: heard.extend(decisions))
    result = types.CallToolResult(content=[types.TextContent(type="text", text="write to a@b.example.org")])
    assert stage.screen(invocation(), result) == result
    [decision] = heard
    assert (decision.rule, decision.action.value, decision.found) == ("mail", "flag", ("EMAIL_ADDRESS",))
    assert stage.guard.counts[("mail", "flag", "pii", "results")] == 1


def test_a_secret_behind_a_json_escape_in_a_raw_answer_is_still_masked() -> None:
    line = b'{"jsonrpc":"2.0","id":"agw:1","result":{"content":[{"type":"text","text":"\\u0041KIAIOSFODNN7EXAMPLE"}]}}'
    screened = orjson.loads(GuardStage(Guard(RULES)).screen(invocation(), line))
    assert screened["result"]["content"][0]["text"] == "[REDACTED:aws_access_key]"


def test_an_answer_that_is_not_json_is_left_to_the_fast_path_to_fail() -> None:
    line = b'{"jsonrpc":"2.0","id":"agw:1","result":{"content":[{"type":"te'
    assert GuardStage(Guard(RULES)).screen(invocation(), line) is line


def test_a_field_named_data_is_read_unless_it_is_an_image_or_audio_payload() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="see structured"),
            types.ImageContent(type="image", data="QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", mime_type="image/png"),
        ],
        structured_content={"data": {"key": AWS_ACCESS_KEY}, "blob": AWS_ACCESS_KEY},
    )
    model, raw = both_ways(result)
    assert model == raw
    assert model["structuredContent"] == {
        "data": {"key": "[REDACTED:aws_access_key]"},
        "blob": "[REDACTED:aws_access_key]",
    }
    assert model["content"][1]["data"] == "QUtJQUlPU0ZPRE5ON0VYQU1QTEU="


def test_a_resource_blob_is_not_read_but_its_text_is() -> None:
    result = types.ReadResourceResult(
        contents=[
            types.BlobResourceContents(uri="file:///a", blob="QUtJQUlPU0ZPRE5ON0VYQU1QTEU="),
            types.TextResourceContents(uri="file:///b", text=f"key {AWS_ACCESS_KEY}"),
        ]
    )
    out = GuardStage(Guard(RULES)).screen(invocation("resources/read"), result)
    dumped = out.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["contents"][0]["blob"] == "QUtJQUlPU0ZPRE5ON0VYQU1QTEU="
    assert dumped["contents"][1]["text"] == "key [REDACTED:aws_access_key]"


def test_an_argument_named_data_is_judged() -> None:
    guard = Guard(
        [GuardrailRule.model_validate({"name": "s", "kind": "secrets", "on": ["arguments"], "action": "block"})]
    )
    with pytest.raises(GuardrailBlockedError):
        GuardStage(guard).admit(invocation(arguments={"data": f"key {AWS_ACCESS_KEY}"}))


def test_a_tasks_result_is_judged_by_its_servers_rules_whatever_their_tools() -> None:
    rule = {"name": "poison", "kind": "injection", "action": "block", "tools": ["fetch_page"]}
    stage = GuardStage(Guard([GuardrailRule.model_validate(rule)]))
    meta = {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}
    payload = {"content": [{"type": "text", "text": INJECTED}], "_meta": meta}
    # The request names the task ("t1"), not the tool it runs.
    task = Invocation("tasks/result", "srv", "t1", Caller(identity=ClientIdentity(profile="default")))
    out = stage.screen(task, payload)
    assert out["isError"] is True and out["_meta"] == meta
    assert out["content"][0]["text"].startswith("Blocked by guardrail 'poison' (injection)")
    assert stage.screen(invocation("tools/call"), payload) is payload  # a tool the rule does not name
