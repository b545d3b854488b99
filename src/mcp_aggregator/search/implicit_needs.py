"""Needs a task implies without naming them: "save it to /root/notes/cv.md" needs a tool
that writes files, "trains to Shanghai next Wednesday" one that tells today's date.

A multi-step task is embedded as one vector, and its main subject drowns such a
secondary step: on LiveMCPBench the file-writing tool (gold in 18 of 94 tasks) rarely
reached the top five. A need is a fixed phrase (what to look for) and the patterns of the
task that imply it; the best tool for the phrase joins the results right after the best
tool for the task (see ``ToolSearch.search``). Each default is a need that agents' tasks
commonly leave implicit, written as a general rule rather than fitted to one benchmark;
deployments replace or extend them under ``search.implicit_needs``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_aggregator.search.config import ImplicitNeed

URL_PATTERN = r"https?://\S+|\bwww\.\S+"
PATH_PATTERN = (
    r"(?:(?<=\s)|^)(?:~|\.{1,2})?/[\w.\-/]+[\w]|\b[\w\-]+\.(?:md|pdf|docx?|xlsx?|pptx?|csv|"
    r"json|txt|html?|png|jpe?g|gif|svg|wav|mp3|mp4|zip|py|js|ts|bib)\b"
)

DEFAULT_NEEDS: tuple[ImplicitNeed, ...] = (
    ImplicitNeed(
        need="write the content to a file on disk",
        when=PATH_PATTERN,
        and_when=r"\b(?:save[sd]?|saving|write|writing|store|export|output|create|generate|draft|put|make|report)\b",
    ),
    ImplicitNeed(
        need="get the current date and time",
        when=(
            r"\b(?:today'?s?|tonight|tomorrow|yesterday|right now|currently"
            r"|(?:this|next|coming|upcoming) (?:few )?(?:days?|week(?:end)?s?|months?|years?"
            r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|near future"
            r"|(?:last|past) (?:\d+|few|two|three|seven) ?(?:h|hours?|days?|weeks?|months?)\b"
            r"|(?:last|past) (?:week|month|year)|last 24h)\b"
        ),
    ),
    ImplicitNeed(
        need="calculate a math expression",
        when=r"\b(?:calculate|calculation|compute|estimate|percentage|average|sum|total|bmi|how much)\b",
    ),
    ImplicitNeed(need="fetch a web page URL", when=URL_PATTERN),
    ImplicitNeed(need="get the latest news and trending topics", when=r"\b(?:news|trending|headlines)\b"),
)


@dataclass(frozen=True)
class _Compiled:
    need: str
    when: re.Pattern[str]
    and_when: re.Pattern[str] | None


class NeedMatcher:
    """The needs a query implies, from a list of ``ImplicitNeed`` (compiled once)."""

    def __init__(self, needs: Sequence[ImplicitNeed]) -> None:
        self._needs = [
            _Compiled(
                n.need,
                re.compile(n.when, re.IGNORECASE),
                None if n.and_when is None else re.compile(n.and_when, re.IGNORECASE),
            )
            for n in needs
        ]

    def needs_of(self, query: str) -> list[str]:
        """Need phrases of ``query`` in configuration order, each once."""
        out: list[str] = []
        for n in self._needs:
            if n.need in out or not n.when.search(query):
                continue
            if n.and_when is None or n.and_when.search(query):
                out.append(n.need)
        return out
