"""``Finding``: one thing a detector found in a text, and the ``Detector`` protocol.

A finding holds where it is (``start``/``end`` in the text scanned), what it is (``label``:
``aws_access_key``, ``EMAIL_ADDRESS``, ``hidden_instruction``...) and why (``reason``), never
a copy of the value: decisions, audit records and metrics are made from the label alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Finding:
    label: str
    start: int
    end: int
    reason: str = ""


class Detector(Protocol):
    """Finds things in text. ``may_find`` is the cheap look: False means ``find`` would find
    nothing (it may say True and ``find`` still find nothing); ``find`` takes that look
    itself before any costly work, so callers need not ask first."""

    def may_find(self, text: str) -> bool: ...

    def find(self, text: str) -> list[Finding]: ...


def masked(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with each finding replaced by ``[REDACTED:<label>]``; overlapping findings
    merge into one, named by the first."""
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if finding.end <= position:
            continue
        start = max(finding.start, position)
        parts.append(text[position:start])
        parts.append(f"[REDACTED:{finding.label}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def labels(findings: Iterable[Finding]) -> list[str]:
    """The distinct labels of ``findings``, in the order first found."""
    return list(dict.fromkeys(f.label for f in findings))
