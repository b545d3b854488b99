"""Domain records the facade views return: tools, servers, their status, pages of tools.

The gateway fills these from its catalog and registry; the facades only project them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp_aggregator.errors import FacadeError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """A tool as the gateway exposes it.

    ``name`` is the name to pass to ``tools execute``; ``original_name`` the upstream's own.
    """

    name: str
    server: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    original_name: str | None = None
    skill: str | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    app: str | None = None
    """The ``ui://`` address of the MCP App the tool renders (read it with ``resources/read``)."""


@dataclass(frozen=True, slots=True)
class ScoredTool:
    """A search hit; ``score`` is higher for better matches."""

    tool: ToolRecord
    score: float


class ScoredTools(list[ScoredTool]):
    """Search hits, and how many tools the ranking could read only by their words
    (``pending``: the search index was still computing their vectors) and how many servers
    were still connecting (their tools not searched yet)."""

    def __init__(self, hits: Sequence[ScoredTool] = (), *, pending: int = 0, connecting: int = 0) -> None:
        super().__init__(hits)
        self.pending = pending
        self.connecting = connecting


@dataclass(frozen=True, slots=True)
class ToolPage:
    """One page of tools; ``next_cursor`` is None on the last page."""

    items: Sequence[ToolRecord]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """An upstream server. ``status`` is its state name (``CONNECTED``, ``DEGRADED``, ...);
    ``details`` holds anything else worth showing at ``full`` (never secrets)."""

    name: str
    status: str
    transport: str
    tool_count: int = 0
    description: str = ""
    tools: Sequence[str] = ()
    last_error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Health of one server. ``since`` is an ISO-8601 time of the last state change."""

    name: str
    state: str
    since: str | None = None
    last_error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


def paginate(items: Sequence[T], cursor: str | None, limit: int) -> tuple[Sequence[T], str | None]:
    """Offset pagination over an already ordered sequence; the cursor is the next offset.

    Raises ``FacadeError`` naming ``params.cursor`` for a cursor it did not hand out.
    """
    start = 0
    if cursor is not None:
        if not cursor.isdigit() or int(cursor) > len(items):
            raise FacadeError(f"params.cursor: invalid cursor {cursor!r}")
        start = int(cursor)
    end = start + limit
    return items[start:end], (str(end) if end < len(items) else None)
