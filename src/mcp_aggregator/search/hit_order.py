"""Pure reordering of a ranked hit list: tools joining after the best hit, alternatives.

Both insert rather than rescore, so a smaller k's results stay a prefix of a larger k's
(the caller computes at least ``HEAD`` hits, whatever k is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mcp_aggregator.search.tool_doc import SearchHit

HEAD = 5
"""Results shown first; the alternatives of these tools follow them."""


def after_best(hits: list[SearchHit], joining: Iterable[SearchHit]) -> list[SearchHit]:
    """``hits`` with ``joining`` right after the best hit, each once, scored as the best.

    Second place, not first: the task's own subject stays on top.
    """
    if not hits:
        return hits
    top = hits[0]
    added = list({h.key: h for h in joining if h.key != top.key}.values())
    if not added:
        return hits
    keys = {h.key for h in added}
    rest = [h for h in hits[1:] if h.key not in keys]
    return [top, *(_rescored(h, top.score) for h in added), *rest]


def with_alternatives(
    hits: list[SearchHit], alternatives_of: Callable[[SearchHit], Iterable[SearchHit]], limit: int
) -> list[SearchHit]:
    """``hits`` with, right after the first ``HEAD``, the alternatives of those (at most
    ``limit``), scored as the last of the head. The head is left alone."""
    head = hits[:HEAD]
    shown = {h.key for h in head}
    found: dict[str, SearchHit] = {}
    for hit in head:
        for alt in alternatives_of(hit):
            if alt.key not in shown and len(found) < limit:
                found.setdefault(alt.key, alt)
    if not found:
        return hits
    score = head[-1].score
    rest = [h for h in hits[HEAD:] if h.key not in found]
    return [*head, *(_rescored(h, score) for h in found.values()), *rest]


def _rescored(hit: SearchHit, score: float) -> SearchHit:
    return SearchHit(hit.key, hit.server, hit.name, hit.description, score, hit.skill_ids)
