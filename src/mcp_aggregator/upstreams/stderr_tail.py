"""The last lines a stdio server wrote to its stderr, kept for its status.

A server that cannot start usually says why there (``can't open file``, ``does not
exist``): the status, the CLI and the page show these lines beside the error. They are
bounded (a chatty server cannot grow the status) and arrive already scrubbed of the
server's secrets.
"""

from __future__ import annotations

from collections import deque
from typing import Final

MAX_LINES: Final = 20
MAX_CHARS: Final = 300
"""Per line: a longer one keeps its start and says how much was cut."""


class StderrTail:
    """The last ``MAX_LINES`` lines, each at most ``MAX_CHARS`` characters."""

    def __init__(self, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._max_chars = max_chars

    def add(self, line: str) -> None:
        text = line.rstrip()
        if not text:
            return
        if len(text) > self._max_chars:
            text = f"{text[: self._max_chars]}... ({len(text) - self._max_chars} more characters)"
        self._lines.append(text)

    def lines(self) -> list[str]:
        return list(self._lines)
