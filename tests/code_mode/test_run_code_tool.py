"""The ``run_code`` tool as a client lists and calls it: its description, its answers, and
the errors a user sees for bad input."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from mcp_aggregator.code_mode import CodeModeSettings, CodeSandbox, ScriptOutcome
from mcp_aggregator.code_mode.run_code_tool import run_code_tool
from tests.conftest import running_gateway, settings_for, stdio_fixture


def answer(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data


def test_the_default_modules_are_named_by_kind_and_a_configured_list_is_spelt_out() -> None:
    default = run_code_tool(CodeSandbox(CodeModeSettings())).description or ""
    chosen = CodeModeSettings.model_validate({"allowed_modules": ["json", "re"], "limits": {"tool_calls": 7}})
    configured = run_code_tool(CodeSandbox(chosen)).description or ""
    assert "Imports: Python's data modules (json, re, math, datetime, collections, itertools, …)." in default
    assert "Imports: json, re. Limits: 7 calls, 30 s." in configured
    assert "await call_tool(name, {arg: value})" in default


def test_a_finished_script_answers_its_result_and_a_failed_one_its_error_and_calls() -> None:
    done = ScriptOutcome(ok=True, value={"n": 1}, output="hi\n", calls=3)
    failed = ScriptOutcome.failed("KeyError: 'x'", line=2, output="so far\n", calls=1)
    assert done.to_dict() == {"result": {"n": 1}, "output": "hi\n"}
    assert failed.to_dict() == {"error": "line 2: KeyError: 'x'", "output": "so far\n", "calls": 1}
    assert ScriptOutcome(ok=True, value=None).to_dict() == {"result": None}


async def test_bad_code_input_gets_an_error_result_naming_the_problem() -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"), exposure="code")) as (_gateway, client):
        empty = await client.call_tool("run_code", {"code": "   "})
        unclosed = await client.call_tool("run_code", {"code": "x = (1,\n"})
        number = await client.call_tool("run_code", {"code": 5})
    assert empty.is_error and answer(empty) == {"error": "ValueError: the script is empty", "calls": 0}
    assert unclosed.is_error and answer(unclosed)["error"] == "line 1: SyntaxError: '(' was never closed"
    assert number.is_error
    assert answer(number) == {"error": "code: must be a string of Python source", "calls": 0}
