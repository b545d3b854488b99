"""The ``run_code`` tool: one script in the sandbox instead of many tool calls.

Every ``call_tool`` of a script enters the relay's one pipeline with the calling client's
``Caller``, so pinning, profiles, policies, rate limits, audit and metrics see the script's
calls as that client's own. Only the script's value (and what it printed) comes back.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_aggregator.code_mode.code_sandbox import CodeSandbox
from mcp_aggregator.code_mode.config import DEFAULT_MODULES
from mcp_aggregator.code_mode.script_outcome import ToolCall
from mcp_aggregator.code_mode.script_values import dumps, tool_error_text, tool_value
from mcp_aggregator.errors import AggregatorError, PolicyError, RoutingError
from mcp_aggregator.relay import Caller, CallPipeline

RUN_CODE_TOOL_NAME = "run_code"


def run_code_tool(sandbox: CodeSandbox) -> types.Tool:
    """The definition clients list; it states the contract a script is written against."""
    limits = sandbox.settings.limits
    allowed = sandbox.settings.allowed_modules
    if set(allowed) == set(DEFAULT_MODULES):
        # The default is the sandbox's data modules; a model knows them by name, and a refused
        # import's error lists every allowed one. A configured list is spelt out.
        modules = "Python's data modules (json, re, math, datetime, collections, itertools, …)"
    else:
        modules = ", ".join(allowed) or "none"
    description = (
        "Run a Python script that calls tools; only its result comes back. "
        "`await call_tool(name, {arg: value})` returns a tool's structured result, else its text "
        "(names and signatures: 'tools'); a failed call raises. The last expression is the result; "
        "print() output comes back too. No files, network or environment. "
        f"Imports: {modules}. Limits: {limits.tool_calls} calls, {limits.timeout_secs:g} s."
    )
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string"}},  # an empty script gets its own clear error
        "required": ["code"],
        "additionalProperties": False,
    }
    return types.Tool(name=RUN_CODE_TOOL_NAME, description=description, input_schema=schema)


async def run_code(
    sandbox: CodeSandbox, pipeline: CallPipeline, arguments: dict[str, Any], caller: Caller
) -> types.CallToolResult:
    """Run ``arguments["code"]`` for ``caller``; the script's failure is an ``isError`` result.

    Raises:
        CodeModeError: the sandbox cannot run scripts at all.
    """
    code = arguments.get("code")
    if not isinstance(code, str):
        outcome = {"error": "code: must be a string of Python source", "calls": 0}
        return types.CallToolResult(content=[types.TextContent(text=dumps(outcome))], is_error=True)
    result = await sandbox.run_script(code, tool_call_for(pipeline, caller))
    return types.CallToolResult(content=[types.TextContent(text=dumps(result.to_dict()))], is_error=not result.ok)


def tool_call_for(pipeline: CallPipeline, caller: Caller) -> ToolCall:
    """``call_tool`` as a script sees it: through ``pipeline`` as ``caller``; a refusal raises
    ``PermissionError``, an unknown name ``LookupError``, any other failure ``RuntimeError``."""

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        try:
            result = await pipeline.call_tool_result(name, arguments, caller=caller)
        except PolicyError as exc:
            raise PermissionError(str(exc)) from None
        except RoutingError as exc:
            raise LookupError(str(exc)) from None
        except AggregatorError as exc:
            raise RuntimeError(str(exc)) from None
        if result.is_error:
            raise RuntimeError(f"{name}: {tool_error_text(result)}")
        return tool_value(result)

    return call
