"""``PatternDetector``: the operator's own regular expressions (a ``pattern`` rule)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_aggregator.guardrails.finding import Finding


class PatternDetector:
    """Each match of one of ``patterns`` is a finding labelled with the rule's name."""

    def __init__(self, label: str, patterns: Sequence[str]) -> None:
        self.label = label
        self._regexes = tuple(re.compile(p) for p in patterns)

    def may_find(self, text: str) -> bool:
        return True

    def find(self, text: str) -> list[Finding]:
        return [
            Finding(self.label, *match.span(), f"matches the pattern {regex.pattern!r}")
            for regex in self._regexes
            for match in regex.finditer(text)
            if match.end() > match.start()
        ]
