"""One facade tool per upstream server (or per skill): each upstream tool becomes a command."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import mcp_types as types

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades.command import Command, Handler
from mcp_aggregator.facades.detail import Detail, excerpt
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.envelope import content_text, render_call_result
from mcp_aggregator.facades.param_schema import ParamSchema

UpstreamCall = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
"""``call(original_tool_name, arguments) -> CallToolResult``; raise an ``AggregatorError``
(``UpstreamError``, ``ServerUnavailableError``, ...) when the call cannot be made."""

SUMMARY_CHARS = 80
DESCRIPTION_CHARS = 120
HELP = "help"
HELP_FALLBACK = "_help"


def build_upstream_domain(
    name: str,
    tools: Sequence[types.Tool],
    call: UpstreamCall,
    *,
    description: str = "",
) -> Domain:
    """A domain named ``name`` with one command per tool (``cmd`` = the tool's own name).

    Params are validated against each tool's input schema (leniently: a broken upstream
    schema disables validation for that tool). A result with ``is_error`` comes back as
    ``ok: false`` with the upstream's text as ``error``. A ``help`` command lists the
    commands; with ``detail: full`` it returns their input schemas. If an upstream tool is
    itself called ``help``, the upstream one keeps the name and ours becomes ``_help``.
    Raises ``ValueError`` when two tools share a name case-insensitively.
    """
    commands = [
        Command(
            tool.name,
            excerpt(tool.description, SUMMARY_CHARS),
            _tool_handler(tool.name, call),
            tool.input_schema,
            lenient=True,
        )
        for tool in tools
    ]
    taken = {command.key for command in commands}
    help_name = HELP_FALLBACK if HELP in taken else HELP
    commands.append(
        Command(
            help_name,
            "list commands; detail=full adds input schemas",
            _help_handler(tools),
            {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "additionalProperties": False,
            },
        )
    )
    return Domain(name, excerpt(description, DESCRIPTION_CHARS), commands)


def _tool_handler(tool_name: str, call: UpstreamCall) -> Handler:
    async def handle(params: dict[str, Any], detail: Detail) -> Any:
        result = await call(tool_name, params)
        if result.is_error:
            raise FacadeError(content_text(result) or f"{tool_name} failed")
        return render_call_result(result, full=detail is Detail.FULL)

    return handle


def _help_handler(tools: Sequence[types.Tool]) -> Handler:
    by_key: Mapping[str, types.Tool] = {tool.name.lower(): tool for tool in tools}

    async def handle(params: dict[str, Any], detail: Detail) -> Any:
        wanted = params.get("command")
        if wanted is None:
            selected = list(tools)
        elif (tool := by_key.get(str(wanted).lower())) is not None:
            selected = [tool]
        else:
            valid = ", ".join(tool.name for tool in tools)
            raise FacadeError(f"params.command: no command {wanted!r}; valid commands: {valid}")
        return [_describe(tool, detail) for tool in selected]

    return handle


def _describe(tool: types.Tool, detail: Detail) -> dict[str, Any]:
    if detail is Detail.MINIMAL:
        return {"name": tool.name}
    if detail is Detail.STANDARD:
        args = ParamSchema(tool.input_schema, lenient=True).signature()
        return {"name": tool.name, "description": excerpt(tool.description), "args": args}
    return {
        "name": tool.name,
        "description": tool.description or "",
        "inputSchema": tool.input_schema,
    }
