"""The ``tools`` domain: search, list, get, execute and validate the gateway's tools."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import mcp_types as types

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades.command import Command
from mcp_aggregator.facades.detail import Detail, Signature, project_hit, project_script_tool, project_tool
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.envelope import Counted, Listing, content_text, render_call_result
from mcp_aggregator.facades.param_schema import ParamSchema, object_schema
from mcp_aggregator.facades.records import ScoredTool, ScoredTools, ToolPage, ToolRecord
from mcp_aggregator.search.tool_doc import incomplete_note

DEFAULT_K = 10
MAX_K = 50
DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class ToolCatalogView(Protocol):
    """What the ``tools`` domain needs from the gateway's catalog.

    Unknown or ambiguous names raise ``ToolNotFoundError`` / ``AmbiguousToolError``; a bad
    cursor raises ``FacadeError`` naming ``params.cursor``. ``records.paginate`` implements
    the cursor contract for views backed by an ordered sequence.
    """

    async def search(self, query: str, k: int, server: str | None, skill: str | None) -> Sequence[ScoredTool]:
        """At most ``k`` hits, best first, filtered by server and/or skill when given."""
        ...

    async def list(self, server: str | None, skill: str | None, cursor: str | None, limit: int) -> ToolPage:
        """At most ``limit`` tools in a stable order, starting at ``cursor``."""
        ...

    async def get(self, name: str) -> ToolRecord: ...

    async def execute(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Route and call the tool; upstream failures raise ``UpstreamError`` subclasses."""
        ...

    async def input_schema(self, name: str, *, calling: bool = False) -> Mapping[str, Any]:
        """The tool's input schema. ``calling``: read for a call about to be made, so a name
        the view refuses is an attempted call (which the view may audit)."""
        ...


_NAME = {"type": "string", "minLength": 1}
# One schema rather than ``anyOf``, so a bad value gets its own message, not "not valid under
# any of the given schemas" (``minLength`` binds strings only, ``*Items`` arrays only).
_NAME_OR_NAMES = {"type": ["string", "array"], "minLength": 1, "items": _NAME, "minItems": 1, "maxItems": MAX_K}
_FILTERS = {"server": {"type": "string"}, "skill": {"type": "string"}}
_ARGUMENTS = {"type": "object"}


def build_tools_domain(
    view: ToolCatalogView,
    *,
    name: str = "tools",
    signature: Signature | None = None,
    commands: Collection[str] | None = None,
) -> Domain:
    """The domain over ``view``. ``signature`` writes each tool for scripts (code mode), and
    its ``get`` also takes a list of names (a script needs several tools at once);
    ``commands`` keeps only the named commands (all five by default)."""

    def project(tool: ToolRecord, detail: Detail) -> Any:
        return project_tool(tool, detail) if signature is None else project_script_tool(tool, detail, signature)

    async def search(params: dict[str, Any], detail: Detail) -> Any:
        hits = await view.search(params["query"], params.get("k", DEFAULT_K), params.get("server"), params.get("skill"))
        projected: list[Any] = (
            [project_hit(hit, detail) for hit in hits]
            if signature is None
            else [project_script_tool(hit.tool, detail, signature) for hit in hits]
        )
        if isinstance(hits, ScoredTools) and (hits.pending or hits.connecting):
            note = incomplete_note(hits.pending, hits.connecting)
            return Counted({"items": projected, "incomplete": note}, len(projected))
        return projected

    async def list_(params: dict[str, Any], detail: Detail) -> Any:
        page = await view.list(
            params.get("server"),
            params.get("skill"),
            params.get("cursor"),
            params.get("limit", DEFAULT_LIMIT),
        )
        return Listing([project(tool, detail) for tool in page.items], page.next_cursor)

    async def get(params: dict[str, Any], detail: Detail) -> Any:
        name = params["name"]
        if isinstance(name, list):
            return [project(await view.get(one), detail) for one in name]
        return project(await view.get(name), detail)

    async def execute(params: dict[str, Any], detail: Detail) -> Any:
        name, arguments = params["name"], params.get("arguments", {})
        ParamSchema.of(await view.input_schema(name, calling=True), lenient=True).check(arguments, "params.arguments")
        result = await view.execute(name, arguments)
        if result.is_error:
            raise FacadeError(content_text(result) or f"{name} failed")
        return render_call_result(result, full=detail is Detail.FULL)

    async def validate(params: dict[str, Any], detail: Detail) -> Any:
        schema = ParamSchema.of(await view.input_schema(params["name"]), lenient=True)
        issues = schema.issues(params.get("arguments", {}), "arguments")
        return {"valid": not issues, "errors": [{"field": i.field, "message": i.message} for i in issues]}

    every = [
        Command(
            "search",
            "rank tools for a task described in words",
            search,
            object_schema(
                {
                    "query": {"type": "string", "minLength": 1, "maxLength": 10000},
                    "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
                    **_FILTERS,
                },
                required=["query"],
            ),
        ),
        Command(
            "list",
            "page through tools (cursor from the last page)",
            list_,
            object_schema(
                {
                    **_FILTERS,
                    "cursor": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                }
            ),
        ),
        Command(
            "get",
            "one tool; detail=full adds its input schema",
            get,
            object_schema({"name": _NAME}, required=["name"]),
        )
        if signature is None
        else Command(
            "get",
            "one tool, or a list of names; detail=full adds argument docs",
            get,
            object_schema({"name": _NAME_OR_NAMES}, required=["name"]),
        ),
        Command(
            "execute",
            "call a tool",
            execute,
            object_schema({"name": _NAME, "arguments": _ARGUMENTS}, required=["name"]),
        ),
        Command(
            "validate",
            "check arguments against a tool's schema, no call",
            validate,
            object_schema({"name": _NAME, "arguments": _ARGUMENTS}, required=["name"]),
        ),
    ]
    kept = [command for command in every if commands is None or command.name in commands]
    runs = any(command.name == "execute" for command in kept)
    what = "Find, inspect and run" if runs else "Find and inspect"
    return Domain(name, f"{what} the tools of all connected servers.", kept)
