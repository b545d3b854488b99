"""``Finding``: one thing a detector found in a text, and the ``Detector`` protocol.

A finding holds where it is (``start``/``end`` in the text scanned), what it is (``label``:
``aws_access_key``, ``EMAIL_ADDRESS``, ``hidden_instruction``...) and why (``reason``), never
a copy of the value: decisions, audit records and metrics are made from the label alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

MAX_FINDINGS: Final = 10_000
"""Findings a rule takes from one value (a result, arguments, a definition) before it stops
reading it: each costs a call into RE2 and an object, and a megabyte can hold a million."""
MAX_CHECKS: Final = 4096
"""Candidates a rule validates per value (a card's checksum, an IBAN's, an address parsed, a
JWT decoded): past them each candidate is ``unjudged``."""
MAX_PARSED_CHARS: Final = 8192
"""Characters a rule hands libphonenumber per value: pure Python, it reads about 1 to 11 µs
a character, so this bounds a value's phone numbers to some 90 ms."""
UNJUDGED: Final = "unjudged"
_PAST_FINDINGS: Final = f"past the {MAX_FINDINGS:,} findings a rule takes from one value"
UNCHECKED: Final = "a candidate past the validations a rule makes in one value"


@dataclass(frozen=True, slots=True)
class Finding:
    label: str
    start: int
    end: int
    reason: str = ""


class Reading:
    """What a rule may still spend on one value, shared by the value's strings in order, and
    whether it needs every finding (``mask``) or the first of each kind (``block`` and
    ``flag``, whose decisions name kinds, not places).

    Past its findings a detector stops looking for that kind and reports the rest of the
    text, from the first match it did not take, as ``unjudged``; past its checks (or parsed
    characters) it reports each candidate it did not validate as ``unjudged``: nothing
    unread passes as if it had been read; a ``mask`` rule masks it, a ``block`` rule blocks."""

    __slots__ = ("checks", "every", "findings", "parsed")

    def __init__(
        self,
        *,
        every: bool = True,
        findings: int = MAX_FINDINGS,
        checks: int = MAX_CHECKS,
        parsed: int = MAX_PARSED_CHARS,
    ) -> None:
        self.every = every
        self.findings = findings
        self.checks = checks
        self.parsed = parsed

    def take(
        self, found: list[Finding], spans: Iterable[tuple[int, int]], label: str, reason: str, length: int
    ) -> None:
        """Append a finding for each of ``spans`` (of a text ``length`` long) while the reading
        allows: the first only unless ``every``; past the findings, ``unjudged`` to the end."""
        for start, end in spans:
            if not self.add(found, Finding(label, start, end, reason), length) or not self.every:
                return

    def add(self, found: list[Finding], finding: Finding, length: int) -> bool:
        """Append ``finding``, or (past the findings) ``unjudged`` from its start to ``length``:
        False then, and the caller stops looking for its kind."""
        if self.findings <= 0:
            found.append(Finding(UNJUDGED, finding.start, length, _PAST_FINDINGS))
            return False
        self.findings -= 1
        found.append(finding)
        return True

    def check(self) -> bool:
        """Whether one more candidate may be validated (then counted)."""
        if self.checks <= 0:
            return False
        self.checks -= 1
        return True

    def parse(self, size: int) -> bool:
        """Whether ``size`` more characters may be handed to a parser (then spent)."""
        if self.parsed < size:
            self.parsed = 0
            return False
        self.parsed -= size
        return True


class Detector(Protocol):
    """Finds things in text. ``may_find`` is the cheap look: False means ``find`` would find
    nothing (it may say True and ``find`` still find nothing); ``find`` takes that look
    itself before any costly work, so callers need not ask first. ``find`` spends from
    ``reading`` (a fresh one when None: every finding, the default bounds)."""

    def may_find(self, text: str) -> bool: ...

    def find(self, text: str, reading: Reading | None = None) -> list[Finding]: ...


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
