"""``linear``: a regular expression compiled by RE2, whose matching time is linear in the text.

Python's ``re`` backtracks: a pattern with nested or adjacent quantifiers (``\\s+...\\s*``, two
``{0,2000}`` spans) can take seconds on a few kilobytes written to trigger it, and a result
is text an upstream chooses. RE2 (``google-re2``) runs an automaton instead: no lookaround
and no backreferences, in exchange for a bound on time that no input can break. The
injection detector's patterns and the operator's ``pattern`` rules are compiled here.
"""

from __future__ import annotations

from typing import Any

import re2

LinearPattern = Any
"""A compiled RE2 pattern (``re2._Regexp``: ``finditer``, ``search``, ``pattern``; the
wrapper ships no type hints). Its wrapper encodes the whole text given at each call: search
a slice, never ``text`` with ``pos``/``endpos`` in a loop."""


def linear(pattern: str, *, ignore_case: bool = False, dot_all: bool = False) -> LinearPattern:
    """``pattern`` compiled by RE2 (Python's syntax, less what needs backtracking).
    Raises ``ValueError`` with RE2's reason when it cannot be (lookaround,
    a backreference, a repeat over 1000)."""
    options = re2.Options()
    options.log_errors = False  # the reason is raised, not printed to stderr
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(reason) from None
