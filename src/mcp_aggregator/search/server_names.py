"""Servers a task names: "referencing Wikipedia", "read its Deepwiki", "using Mermaid".

The task's main subject usually outweighs the service it names in passing ("an overview
of convolutional neural networks, referencing Wikipedia" ranks paper-search tools above
Wikipedia's). A word of a server's name that occurs in no other server's tools names that
server; when a task contains it, the server's best tool joins the head of the results
(see ``ToolSearch.search``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from mcp_aggregator.search.implicit_needs import PATH_PATTERN
from mcp_aggregator.search.ranking import normalise_query
from mcp_aggregator.text import search_terms

# Words too common in server names to name one; short words are left out too ("ui", "gg").
_GENERIC = frozenset(
    {"mcp", "server", "service", "tool", "api", "model", "context", "protocol", "simple", "free", "official"}
)
_MIN_WORD = 4
_PATH = re.compile(PATH_PATTERN)


@lru_cache(maxsize=16384)  # server names outlive catalogue changes; rebuilding stays cheap
def name_words(server: str) -> frozenset[str]:
    """Search terms of a server's name that could name it (stemmed like queries are)."""
    return frozenset(w for w in search_terms(server) if len(w) >= _MIN_WORD and w not in _GENERIC)


def mention_terms(query: str) -> set[str]:
    """Terms of ``query`` outside file paths (``/root/music/a.wav`` names no music server);
    a URL contributes its host's words (``youtube``)."""
    return set(search_terms(normalise_query(_PATH.sub(" ", query))))


class ServerNames:
    """Word → the one server it names, for a fixed catalogue."""

    def __init__(self, servers: Iterable[str], sole_server_with: Callable[[str], str | None]) -> None:
        """``sole_server_with(term)``: the one server whose tools' indexed text contains
        ``term``, or None when none or several do."""
        self._server_of: dict[str, str] = {}
        for server in servers:
            for word in name_words(server):
                if sole_server_with(word) == server:
                    self._server_of[word] = server

    def named_in(self, query: str) -> list[str]:
        """Servers ``query`` names, in name order."""
        if not self._server_of:
            return []
        return sorted({server for term in mention_terms(query) if (server := self._server_of.get(term)) is not None})
