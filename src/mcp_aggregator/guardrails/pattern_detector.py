"""``PatternDetector``: the operator's own regular expressions (a ``pattern`` rule).

Compiled by RE2 (``linear``): an operator's pattern meets text an upstream writes, and with
Python's backtracking engine one careless ``(a+)+`` would let a result hold the gateway for
minutes. RE2 takes Python's syntax less lookaround and backreferences; the config check
refuses a pattern it cannot compile, naming why, and one that matches the empty string (it
would match at every character). A ``block`` or ``flag`` rule takes each pattern's first
match only; a ``mask`` rule takes up to ``MAX_FINDINGS`` (``Reading``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mcp_aggregator.guardrails.finding import MAX_FINDINGS, UNJUDGED, Finding, Reading
from mcp_aggregator.guardrails.linear_regex import Utf8Text, linear

_PAST_EMPTY: Final = f"past {MAX_FINDINGS:,} empty matches of one pattern in one text"


class PatternDetector:
    """Each match of one of ``patterns`` is a finding labelled with the rule's name."""

    def __init__(self, label: str, patterns: Sequence[str]) -> None:
        self.label = label
        self._regexes = tuple(linear(p) for p in patterns)

    def may_find(self, text: str) -> bool:
        return True

    def find(self, text: str, reading: Reading | None = None) -> list[Finding]:
        reading = Reading() if reading is None else reading
        encoded, length = Utf8Text(text), len(text)
        found: list[Finding] = []
        for regex in self._regexes:
            reason, empty = f"matches the pattern {regex.pattern!r}", 0
            for start, end in encoded.spans(regex):
                if end > start:
                    if not reading.add(found, Finding(self.label, start, end, reason), length) or not reading.every:
                        break
                    continue
                # An empty match finds nothing but costs a call into RE2 (``\b`` matches at
                # every word's edge); the config refuses patterns that match the empty string.
                empty += 1
                if empty > MAX_FINDINGS:
                    found.append(Finding(UNJUDGED, start, length, _PAST_EMPTY))
                    break
        return found
