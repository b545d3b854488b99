"""What search indexes (``ToolDoc``) and what it returns (``SearchHit``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_aggregator.search.lexical_index import split_identifier

EXCERPT_CHARS = 200


@dataclass(frozen=True)
class ToolDoc:
    """One tool of one upstream server, as search sees it.

    ``key`` is the canonical ``server.tool`` name; ``name`` the upstream's original name.
    """

    key: str
    server: str
    name: str
    description: str = ""
    server_description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    skill_ids: tuple[str, ...] = ()

    def dense_text(self) -> str:
        """The text embedded for this tool: server and tool name as words, then description.

        The server's own description is left out: it is the same for all its tools and
        pulls them together, which the server boost in ranking already does.
        """
        server = " ".join(split_identifier(self.server))
        name = " ".join(split_identifier(self.name))
        return f"{server} / {name}: {self.description}".strip()

    def lexical_text(self) -> str:
        return f"{self.name} {self.description} {self.server} {self.server_description}"


@dataclass(frozen=True)
class SearchHit:
    """One search result. ``description`` is an excerpt of at most ~200 characters."""

    key: str
    server: str
    name: str
    description: str
    score: float
    skill_ids: tuple[str, ...] = ()


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut at a word boundary with an ellipsis when longer than ``limit``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"
