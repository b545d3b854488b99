"""Finding the tool (and argument) through which a server can be asked a free-text query.

Only tools that look read-only are ever chosen on their own: the aggregator calls them
with a user's question, unattended, on every server at once, so a tool that writes,
sends, deletes, executes or pays must never be picked by a heuristic. A tool named by
``queryTool`` in the configuration is the operator's explicit choice and is taken as is
(except when it requires task augmentation, which a plain call cannot satisfy).

Detection is deterministic: candidates are ordered by a total key, so the same tool list
always gives the same choice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types

from mcp_aggregator.aggregate.config import MAX_RESULTS_PLACEHOLDER, QUERY_PLACEHOLDER, ServerQuerySettings

QueryStyle = Literal["auto", "semantic", "literal"]

# Argument names that say "put the question here", best first.
QUERY_ARGUMENT_NAMES: tuple[str, ...] = (
    "query",
    "q",
    "search",
    "search_query",
    "searchQuery",
    "question",
    "keywords",
    "keyword",
    "terms",
    "term",
    "topic",
)
# Names that take free text but not necessarily a question (``send_message(text)``): only
# accepted on a tool whose name sounds like search or that is annotated read-only.
WEAK_ARGUMENT_NAMES: tuple[str, ...] = ("prompt", "text", "input")
_ARGUMENT_RANK = {name: rank for rank, name in enumerate((*QUERY_ARGUMENT_NAMES, *WEAK_ARGUMENT_NAMES))}

_SEARCHY_WORDS = frozenset(
    ["search", "query", "find", "lookup", "retrieve", "ask", "docs", "grep", "recall", "match", "fetch"]
)
# A tool whose name holds one of these words, or whose description starts with one, acts
# on the world; the aggregator never calls it unless configured to.
WRITE_WORDS = frozenset(
    [
        "write",
        "writes",
        "send",
        "sends",
        "create",
        "creates",
        "delete",
        "deletes",
        "remove",
        "removes",
        "update",
        "updates",
        "insert",
        "inserts",
        "execute",
        "executes",
        "exec",
        "run",
        "runs",
        "pay",
        "pays",
        "payment",
        "purchase",
        "buy",
        "post",
        "put",
        "patch",
        "modify",
        "edit",
        "set",
        "add",
        "adds",
        "move",
        "moves",
        "rename",
        "upload",
        "deploy",
        "drop",
        "kill",
        "destroy",
        "erase",
        "wipe",
        "purge",
        "reset",
        "commit",
        "push",
        "merge",
        "checkout",
        "transfer",
        "submit",
        "publish",
        "invite",
        "toggle",
        "trigger",
        "start",
        "stop",
        "restart",
        "install",
        "uninstall",
        "approve",
        "cancel",
        "close",
        "archive",
        "clear",
        "truncate",
        "replace",
        "save",
        "store",
        "apply",
        "assign",
        "grant",
        "revoke",
        "charge",
        "refund",
        "email",
        "tweet",
        "reply",
        "fork",
        "overwrite",
        "append",
        "mutate",
        "register",
        "unregister",
        "subscribe",
        "unsubscribe",
        "book",
        "order",
    ]
)
_LITERAL_HINTS = re.compile(
    r"substring|literal|exact(?:ly)? match|glob|regex|regular expression|\bgrep\b|"
    r"match(?:es|ing)? against|keyword",
    re.IGNORECASE,
)
_SEMANTIC_HINTS = re.compile(
    r"semantic|natural[ -]language|embedding|vector|similar(?:ity)?|meaning|conceptual|"
    r"(?:ask|answer)s? (?:a |any )?question",
    re.IGNORECASE,
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_LISTED_EXCLUSIONS = 3


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """How to ask one server: call ``tool`` with ``arguments_for(query, max_results)``.

    ``style`` says what the tool understands: ``semantic`` wants the whole question,
    ``literal`` matches text literally (send keywords), ``auto`` is not known yet.
    """

    tool: str
    argument: str | None = None
    template: Mapping[str, Any] | None = None
    style: QueryStyle = "auto"
    description: str = ""

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


def plan_query(tools: Sequence[mcp_types.Tool], configured: ServerQuerySettings | None) -> QueryPlan | NoQueryTool:
    """Decide how to query a server from its tool list and its optional settings.

    A configured ``queryTool`` must be offered by the server; it wins over detection even
    when it does not look read-only, but not when it requires tasks. With no configured
    argument or template its argument is detected like any other tool's.
    """
    configured_style: QueryStyle = configured.query_style if configured is not None else "auto"
    if configured is None or configured.query_tool is None:
        plan = detect_query_tool(tools)
        return _with_style(plan, tools, configured_style) if isinstance(plan, QueryPlan) else plan
    tool = next((t for t in tools if t.name == configured.query_tool), None)
    if tool is None:
        return NoQueryTool(f"configured query tool {configured.query_tool!r} is not offered")
    if requires_task(tool):
        return NoQueryTool(
            f"configured query tool {tool.name!r} requires task augmentation, which the aggregator does not use"
        )
    style = configured_style if configured_style != "auto" else style_of(tool)
    description = tool.description or ""
    if configured.arguments_template is not None:
        return QueryPlan(tool.name, template=configured.arguments_template, style=style, description=description)
    if configured.query_argument is not None:
        return QueryPlan(tool.name, argument=configured.query_argument, style=style, description=description)
    found = _query_argument_key(tool, allow_weak=True)
    if found is None:
        return NoQueryTool(f"configured query tool {tool.name!r} takes no free-text argument")
    return QueryPlan(tool.name, argument=found[2], style=style, description=description)


def detect_query_tool(tools: Sequence[mcp_types.Tool]) -> QueryPlan | NoQueryTool:
    """Pick the best safe tool taking a free-text string argument.

    Excluded: tools that are not read-only by their annotations (``readOnlyHint: false``,
    ``destructiveHint: true``), by their name, or by their description's first word (see
    ``WRITE_WORDS``), unless annotated ``readOnlyHint: true`` (the name still counts);
    tools whose ``execution.taskSupport`` is ``required``; tools with other required
    properties, which we could not fill.

    Preference: the tool's name sounds like search; it is annotated read-only; the
    argument is required; the argument's name ranks earlier in ``QUERY_ARGUMENT_NAMES``;
    then the tool name.
    """
    best: tuple[tuple[int, int, int, int, str], QueryPlan] | None = None
    excluded: list[str] = []
    for tool in tools:
        searchy = sounds_like_search(tool.name)
        read_only = _read_only_hint(tool) is True
        found = _query_argument_key(tool, allow_weak=searchy or read_only)
        if found is None:
            continue
        why_not = unsafe_reason(tool)
        if why_not is not None:
            excluded.append(f"{tool.name}: {why_not}")
            continue
        not_required, name_rank, argument = found
        key = (0 if searchy else 1, 0 if read_only else 1, not_required, name_rank, tool.name)
        if best is None or key < best[0]:
            best = (key, QueryPlan(tool=tool.name, argument=argument, description=tool.description or ""))
    if best is not None:
        return best[1]
    if not excluded:
        return NoQueryTool("no usable query tool")
    listed = "; ".join(sorted(excluded)[:_LISTED_EXCLUSIONS])
    more = len(excluded) - _LISTED_EXCLUSIONS
    return NoQueryTool(f"no usable query tool (skipped {listed}{f'; {more} more' if more > 0 else ''})")


def unsafe_reason(tool: mcp_types.Tool) -> str | None:
    """Why the aggregator must not call ``tool`` on its own, or None when it may."""
    if requires_task(tool):
        return "requires tasks"
    annotations = tool.annotations
    if annotations is not None and annotations.destructive_hint is True:
        return "destructive"
    read_only = _read_only_hint(tool)
    if read_only is False:
        return "not read-only"
    if WRITE_WORDS.intersection(name_words(tool.name)):
        return "name says it writes"
    if read_only is None and _leading_word(tool.description) in WRITE_WORDS:
        return "description says it writes"
    return None


def requires_task(tool: mcp_types.Tool) -> bool:
    return tool.execution is not None and tool.execution.task_support == "required"


def style_of(tool: mcp_types.Tool, argument: str | None = None) -> QueryStyle:
    """What the tool's own words say about how it matches: literal, semantic, or unknown."""
    texts = [tool.description or ""]
    properties = tool.input_schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if (argument is None or name == argument) and isinstance(prop, Mapping):
                described = prop.get("description")
                if isinstance(described, str):
                    texts.append(described)
    text = " ".join(texts)
    literal = _LITERAL_HINTS.search(text) is not None
    semantic = _SEMANTIC_HINTS.search(text) is not None
    if literal == semantic:
        return "auto"
    return "literal" if literal else "semantic"


def sounds_like_search(tool_name: str) -> bool:
    return any(word in _SEARCHY_WORDS or "search" in word for word in name_words(tool_name))


def name_words(tool_name: str) -> list[str]:
    """``getUserPosts`` / ``get-user_posts`` → ``["get", "user", "posts"]``."""
    return _WORD.findall(_CAMEL_BOUNDARY.sub(" ", tool_name).lower())


def _with_style(plan: QueryPlan, tools: Sequence[mcp_types.Tool], configured: QueryStyle) -> QueryPlan:
    if configured != "auto":
        style: QueryStyle = configured
    else:
        tool = next(t for t in tools if t.name == plan.tool)
        style = style_of(tool, plan.argument)
    return QueryPlan(plan.tool, argument=plan.argument, style=style, description=plan.description)


def _read_only_hint(tool: mcp_types.Tool) -> bool | None:
    return tool.annotations.read_only_hint if tool.annotations is not None else None


def _leading_word(description: str | None) -> str:
    words = _WORD.findall((description or "").lower()[:80])
    return words[0] if words else ""


def _query_argument_key(tool: mcp_types.Tool, *, allow_weak: bool) -> tuple[int, int, str] | None:
    """(0 if required else 1, name rank, property name) of the best free-text property."""
    schema = tool.input_schema
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    required_raw = schema.get("required")
    required = {name for name in required_raw if isinstance(name, str)} if isinstance(required_raw, list) else set()
    best: tuple[int, int, str] | None = None
    for name, prop in properties.items():
        rank = _ARGUMENT_RANK.get(name)
        if rank is None or not _is_string_schema(prop):
            continue
        if name in WEAK_ARGUMENT_NAMES and not allow_weak:
            continue
        if required - {name}:
            continue
        key = (0 if name in required else 1, rank, name)
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
