"""Two search servers for the aggregator quality benchmark, run as stdio subprocesses.

``issues CORPUS``: an issue tracker whose ``search_issues`` matches a substring of title or
body (any case), as real trackers' quick search does. ``docs CORPUS``: a handbook whose
``search_docs`` ranks documents by how many of the question's words they share, so a whole
question works (a stand-in for a semantic search service).
"""

import json
import re
import sys
from pathlib import Path

from mcp.server import MCPServer

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i"),
        *("in", "is", "it", "my", "of", "on", "or", "should", "the", "to", "what", "when", "which", "why"),
        *("with", "you", "your", "our"),
    }
)
DOCS_RETURNED = 5


def _terms(text: str) -> set[str]:
    return {word[:5] for word in _WORD.findall(text.lower()) if word not in _STOP}


def issues_server(corpus: dict[str, list[dict[str, str]]]) -> MCPServer:
    app = MCPServer("issues")
    issues = corpus["issues"]

    @app.tool(structured_output=False)
    def search_issues(query: str) -> str:
        """Search the issue tracker: issues whose title or body contains the text."""
        needle = query.lower()
        found = [i for i in issues if needle in i["title"].lower() or needle in i["body"].lower()]
        return json.dumps({"items": found[:20]})

    return app


def docs_server(corpus: dict[str, list[dict[str, str]]]) -> MCPServer:
    app = MCPServer("docs")
    docs = [(doc, _terms(f"{doc['title']} {doc['text']}")) for doc in corpus["docs"]]

    @app.tool(structured_output=False)
    def search_docs(query: str) -> str:
        """Semantic search over the engineering handbook: ask a natural-language question."""
        wanted = _terms(query)
        scored = sorted(((-len(wanted & terms), doc["id"], doc) for doc, terms in docs if wanted & terms))
        return json.dumps({"results": [doc for _, _, doc in scored[:DOCS_RETURNED]]})

    return app


if __name__ == "__main__":
    mode, corpus_path = sys.argv[1], Path(sys.argv[2])
    loaded = json.loads(corpus_path.read_text())
    (issues_server if mode == "issues" else docs_server)(loaded).run()
