"""``linear``: a regular expression compiled by RE2, whose matching time is linear in the text.

Python's ``re`` backtracks: a pattern with nested or adjacent quantifiers (``\\s+...\\s*``, two
``{0,2000}`` spans) can take seconds on a few kilobytes written to trigger it, and a result
is text an upstream chooses. RE2 (``google-re2``) runs an automaton instead: no lookaround
and no backreferences, in exchange for a bound on time that no input can break. The
injection detector's patterns and the operator's ``pattern`` rules are compiled here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import re2
from re2 import _re2

LinearPattern = Any
"""A compiled RE2 pattern (``re2._Regexp``: ``finditer``, ``search``, ``pattern``; the
wrapper ships no type hints). Its wrapper encodes the whole text given at each call: search
a slice, never ``text`` with ``pos``/``endpos`` in a loop."""


_UNANCHORED: Final = _re2.RE2.Anchor.UNANCHORED
_CONTINUATION: Final = bytes(range(0x80, 0xC0))
"""The bytes that continue a character in UTF-8: a span's characters are its other bytes,
counted by deleting these (C speed, some four times ``_re2.BytesToCharLen``'s)."""


def linear(pattern: str, *, ignore_case: bool = False, dot_all: bool = False, memory: int = 8 << 20) -> LinearPattern:
    """``pattern`` compiled by RE2 (Python's syntax, less what needs backtracking).
    ``memory``: what its automaton may use (RE2's default 8 MiB); a pattern of large Unicode
    classes that outgrows it falls back to RE2's slower simulation, still linear.
    Raises ``ValueError`` with RE2's reason when it cannot be (lookaround,
    a backreference, a repeat over 1000)."""
    options = re2.Options()
    options.max_mem = memory
    options.log_errors = False  # the reason is raised, not printed to stderr
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(reason) from None


@dataclass(frozen=True, slots=True)
class Framed:
    """``(?:^|<before>)(<core>)<after>``: Python's ``(?<!...)core(?!...)`` for RE2, the
    lookbehind matched as one character (``before``, a class) or the text's start, the
    lookahead as ``after``: one character or the text's end, or (``dotted``) a ``.`` and one
    character or the end after it. ``core`` never matches the empty string, nor ends with a
    character ``after`` may match first (a ``.`` when ``dotted``).

    Kept twice: with its group, and without, whose matches RE2 finds by its automata alone
    (a group costs its slower submatch engine, two to three times the search with Unicode
    classes); the group's ends are then the match's less one character on each side, except
    at the text's ends, where the grouped pattern is asked."""

    grouped: LinearPattern
    whole: LinearPattern
    dotted: bool

    @classmethod
    def of(cls, before: str, core: str, after: str, *, dotted: bool = False, memory: int = 8 << 20) -> Framed:
        return cls(
            linear(f"(?:^|{before})({core}){after}", memory=memory),
            linear(f"(?:^|{before})(?:{core}){after}", memory=memory),
            dotted,
        )


class Utf8Text:
    """A text encoded once as RE2 reads it (UTF-8), for any number of searches of it: the
    wrapper's own ``search``/``finditer`` encode the whole text at each call and build a
    match object per match, which over a megabyte of matches costs more than the matching."""

    __slots__ = ("_ascii", "data", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode()
        self._ascii = text.isascii()

    def spans(self, pattern: LinearPattern, group: int = 0, resume: int = 0) -> Iterator[tuple[int, int]]:
        """The spans (in the text's characters) of ``group`` in each match of ``pattern``,
        left to right, as ``pattern.finditer`` gives them (a match whose group took no part
        is skipped). The caller stops when it has enough: each match is one call into RE2.
        ``resume``: the group after which the next search starts (0: the match), so that a
        group after it stands for a lookahead (RE2 has none): it is read, not consumed."""
        data, ascii_only = self.data, self._ascii
        match, end = pattern._regexp.Match, len(data)
        position = byte_mark = char_mark = 0
        while True:
            found = match(_UNANCHORED, data, position, end)
            whole, span = found[0], found[group]
            if whole[0] < 0:
                return
            if span[0] >= 0:
                if ascii_only:
                    yield span
                else:
                    # Offsets only grow, so each byte is counted once whatever the number of matches.
                    start = char_mark + len(data[byte_mark : span[0]].translate(None, _CONTINUATION))
                    char_mark = start + len(data[span[0] : span[1]].translate(None, _CONTINUATION))
                    byte_mark = span[1]
                    yield start, char_mark
            if position == end:
                return
            after = found[resume][1] if found[resume][0] >= 0 else whole[1]
            position = after if after != position else position + _re2.CharLenToBytes(data, position, 1)

    def framed_spans(self, framed: Framed) -> Iterator[tuple[int, int]]:
        """The spans (in characters) of ``framed``'s core, as ``spans(framed.grouped, 1,
        resume=1)`` gives them, found with ``framed.whole``."""
        data, ascii_only, dotted = self.data, self._ascii, framed.dotted
        whole, grouped, end = framed.whole._regexp.Match, framed.grouped._regexp.Match, len(data)
        position = byte_mark = char_mark = 0
        while True:
            start, stop = whole(_UNANCHORED, data, position, end)[0]
            if start < 0:
                return
            if start == 0 or stop == end:
                # Only here may the frame be the text's start or end rather than a character.
                start, stop = grouped(_UNANCHORED, data, position, end)[1]
            else:
                lead = data[start]
                start += 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
                stop -= 1
                while data[stop] & 0xC0 == 0x80:  # back to the first byte of the last character
                    stop -= 1
                if dotted and data[stop - 1] == 0x2E:
                    stop -= 1
            position = stop
            if ascii_only:
                yield start, stop
            else:
                first = char_mark + len(data[byte_mark:start].translate(None, _CONTINUATION))
                char_mark = first + len(data[start:stop].translate(None, _CONTINUATION))
                byte_mark = stop
                yield first, char_mark
