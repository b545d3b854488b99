"""Finding the tool (and argument) through which a server can be asked a free-text query.

Detection is deterministic: candidates are ordered by a total key, so the same tool list
always gives the same choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types

from mcp_aggregator.aggregate.config import MAX_RESULTS_PLACEHOLDER, QUERY_PLACEHOLDER, ServerQuerySettings

# Earlier names are better evidence that the property takes the user's question.
QUERY_ARGUMENT_NAMES: tuple[str, ...] = (
    "query",
    "q",
    "search",
    "search_query",
    "searchQuery",
    "question",
    "prompt",
    "keywords",
    "keyword",
    "terms",
    "term",
    "topic",
    "text",
    "input",
)
_SEARCHY_TOOL_WORDS = ("search", "query", "find", "lookup", "retrieve", "ask", "docs")


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """How to ask one server: call ``tool`` with ``arguments_for(query, max_results)``."""

    tool: str
    argument: str | None = None
    template: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.argument is None) == (self.template is None):
            raise ValueError("a QueryPlan needs exactly one of argument and template")

    def arguments_for(self, query: str, max_results: int) -> dict[str, Any]:
        if self.template is not None:
            return {key: _fill(item, query, max_results) for key, item in self.template.items()}
        return {str(self.argument): query}


@dataclass(frozen=True, slots=True)
class NoQueryTool:
    """Why a server cannot be asked; ``reason`` completes "<server>: ..."."""

    reason: str


def plan_query(
    tools: Sequence[mcp_types.Tool], configured: ServerQuerySettings | None
) -> QueryPlan | NoQueryTool:
    """Decide how to query a server from its tool list and its optional settings.

    A configured ``queryTool`` must be offered by the server; with no configured
    argument or template its argument is detected like any other tool's.
    """
    if configured is None or configured.query_tool is None:
        return detect_query_tool(tools)
    tool = next((t for t in tools if t.name == configured.query_tool), None)
    if tool is None:
        return NoQueryTool(f"configured query tool {configured.query_tool!r} is not offered")
    if configured.arguments_template is not None:
        return QueryPlan(tool=tool.name, template=configured.arguments_template)
    if configured.query_argument is not None:
        return QueryPlan(tool=tool.name, argument=configured.query_argument)
    found = _query_argument_key(tool)
    if found is None:
        return NoQueryTool(f"configured query tool {tool.name!r} takes no free-text argument")
    return QueryPlan(tool=tool.name, argument=found[2])


def detect_query_tool(tools: Sequence[mcp_types.Tool]) -> QueryPlan | NoQueryTool:
    """Pick the best tool taking a free-text string argument.

    Preference: the argument is required; the tool's name suggests searching; the
    argument's name ranks earlier in ``QUERY_ARGUMENT_NAMES``; then the tool name. Tools
    with other required properties (which we could not fill) and tools annotated as
    destructive are never chosen.
    """
    best: tuple[tuple[int, int, int, str], QueryPlan] | None = None
    for tool in tools:
        found = _query_argument_key(tool)
        if found is None:
            continue
        not_required, name_rank, argument = found
        key = (not_required, 0 if _sounds_like_search(tool.name) else 1, name_rank, tool.name)
        if best is None or key < best[0]:
            best = (key, QueryPlan(tool=tool.name, argument=argument))
    return best[1] if best is not None else NoQueryTool("no query tool")


def _query_argument_key(tool: mcp_types.Tool) -> tuple[int, int, str] | None:
    """(0 if required else 1, name rank, property name) of the best free-text property."""
    if tool.annotations is not None and tool.annotations.destructive_hint is True:
        return None
    schema = tool.input_schema
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    required_raw = schema.get("required")
    required = (
        {name for name in required_raw if isinstance(name, str)} if isinstance(required_raw, list) else set()
    )
    best: tuple[int, int, str] | None = None
    for name, prop in properties.items():
        if name not in QUERY_ARGUMENT_NAMES or not _is_string_schema(prop):
            continue
        if required - {name}:
            continue
        key = (0 if name in required else 1, QUERY_ARGUMENT_NAMES.index(name), name)
        if best is None or key < best:
            best = key
    return best


def _is_string_schema(prop: object) -> bool:
    if not isinstance(prop, Mapping):
        return False
    kind = prop.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    variants = prop.get("anyOf") or prop.get("oneOf")
    return isinstance(variants, list) and any(_is_string_schema(v) for v in variants)


def _sounds_like_search(tool_name: str) -> bool:
    lowered = tool_name.lower()
    return any(word in lowered for word in _SEARCHY_TOOL_WORDS)


def _fill(value: object, query: str, max_results: int) -> object:
    if isinstance(value, str):
        if value == MAX_RESULTS_PLACEHOLDER:
            return max_results
        return value.replace(QUERY_PLACEHOLDER, query)
    if isinstance(value, Mapping):
        return {key: _fill(item, query, max_results) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, query, max_results) for item in value]
    return value
