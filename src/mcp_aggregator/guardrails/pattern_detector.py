"""``PatternDetector``: the operator's own regular expressions (a ``pattern`` rule).

Compiled by RE2 (``linear``): an operator's pattern meets text an upstream writes, and with
Python's backtracking engine one careless ``(a+)+`` would let a result hold the gateway for
minutes. RE2 takes Python's syntax less lookaround and backreferences; the config check
refuses a pattern it cannot compile, naming why.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_aggregator.guardrails.finding import Finding
from mcp_aggregator.guardrails.linear_regex import linear


class PatternDetector:
    """Each match of one of ``patterns`` is a finding labelled with the rule's name."""

    def __init__(self, label: str, patterns: Sequence[str]) -> None:
        self.label = label
        self._regexes = tuple(linear(p) for p in patterns)

    def may_find(self, text: str) -> bool:
        return True

    def find(self, text: str) -> list[Finding]:
        return [
            Finding(self.label, match.start(), match.end(), f"matches the pattern {regex.pattern!r}")
            for regex in self._regexes
            for match in regex.finditer(text)
            if match.end() > match.start()
        ]
