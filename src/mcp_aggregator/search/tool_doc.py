"""What search indexes (``ToolDoc``) and what it returns (``SearchHit``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mcp_aggregator.text import split_identifier

EXCERPT_CHARS = 200
_LATIN_SHARE = 0.8


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

        The server's own description is left out: it is the same for all its tools and is
        embedded once for the server (``server_text``). A description the English model
        cannot read (empty, or mostly non-Latin script) is replaced by the parameter names
        and the server's description, which say more than nothing.
        """
        server = identifier_words(self.server)
        name = identifier_words(self.name)
        if is_latin(self.description):
            return f"{server} / {name}: {self.description}".strip()
        params = ", ".join(identifier_words(p) for p in self.parameters())
        fallback = self.server_description if is_latin(self.server_description) else ""
        return f"{server} / {name}: {params}. {fallback}".strip(" .")

    def lexical_text(self) -> str:
        """The text BM25 indexes: names, description, parameters and the server's text."""
        return f"{self.own_lexical_text()} {self.server_lexical_text()}"

    def own_lexical_text(self) -> str:
        """The tool's part of ``lexical_text``: name, description and parameters."""
        params = " ".join(f"{name} {desc}" for name, desc in self.parameters().items())
        return f"{self.name} {self.description} {params}"

    def server_lexical_text(self) -> str:
        """The server's part of ``lexical_text``, the same for all its tools."""
        return f"{self.server} {self.server_description}"

    def server_text(self) -> str:
        """The text embedded for this tool's server: its name as words and its description."""
        server = identifier_words(self.server)
        if is_latin(self.server_description):
            return f"{server}: {self.server_description}".strip()
        return server

    def parameters(self) -> dict[str, str]:
        """Top-level input parameter names mapped to their descriptions ("" when none)."""
        props = self.input_schema.get("properties") if isinstance(self.input_schema, dict) else None
        if not isinstance(props, dict):
            return {}
        return {str(name): _description_of(spec) for name, spec in props.items()}


@dataclass(frozen=True)
class SearchHit:
    """One search result. ``description`` is an excerpt of at most ~200 characters."""

    key: str
    server: str
    name: str
    description: str
    score: float
    skill_ids: tuple[str, ...] = ()


class SearchResults(list[SearchHit]):
    """Hits best first, how many tools were still waiting for their vectors, and how many
    servers were still making their first connection.

    ``pending > 0`` means the dense index was incomplete and every tool was ranked by its
    words alone; ``connecting > 0`` that some servers' tools are not known yet: either way
    callers tell the user the ranking is provisional.
    """

    def __init__(self, hits: Iterable[SearchHit] = (), *, pending: int = 0, connecting: int = 0) -> None:
        super().__init__(hits)
        self.pending = pending
        self.connecting = connecting

    @property
    def complete(self) -> bool:
        return self.pending == 0 and self.connecting == 0


def incomplete_note(pending: int, connecting: int = 0) -> str:
    """What a client is told when ``pending`` tools were ranked by their words alone and
    ``connecting`` servers were still starting."""
    parts = []
    if pending:
        parts.append(f"{pending} tools not indexed yet, ranked by words only")
    if connecting:
        parts.append(f"{connecting} servers still connecting")
    return f"search index incomplete: {'; '.join(parts) or 'still building'}; search again"


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


@lru_cache(maxsize=65_536)
def identifier_words(name: str) -> str:
    """``split_identifier`` joined by spaces; server names repeat for every tool."""
    return " ".join(split_identifier(name))


def _description_of(spec: object) -> str:
    desc = spec.get("description") if isinstance(spec, dict) else None
    return desc if isinstance(desc, str) else ""


def is_latin(text: str) -> bool:
    """Whether ``text`` is non-empty and mostly ASCII, i.e. readable by an English model."""
    stripped = "".join(text.split())
    if stripped.isascii():
        return bool(stripped)
    return sum(map(str.isascii, stripped)) >= _LATIN_SHARE * len(stripped)
