"""What a script came to, as the model reads it back, and what a script may call."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

CALL_TOOL: Final = "call_tool"
ToolCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``(name, arguments) -> value`` for the script; raises a builtin exception the script may catch."""


@dataclass(frozen=True, slots=True)
class ScriptOutcome:
    """A finished script: its value (plain JSON data) or the error that stopped it.

    ``error`` reads ``line N: Type: message`` when the failure has a place in the script, so
    a model can fix that line; ``output`` is what the script printed (capped).
    """

    ok: bool
    value: Any = None
    output: str = ""
    calls: int = 0
    error: str | None = None
    line: int | None = None

    @classmethod
    def failed(cls, error: str, *, line: int | None = None, output: str = "", calls: int = 0) -> ScriptOutcome:
        where = f"line {line}: " if line is not None else ""
        return cls(ok=False, output=output, calls=calls, error=f"{where}{error}", line=line)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape: ``{"result", "output"?}`` or ``{"error", "output"?, "calls"}``.

        Only what the model cannot know already: ``isError`` tells success from failure, the
        error names its line, and a script that finished made the calls it was written to
        make; one that failed says how many it made (their effects may stand).
        """
        out: dict[str, Any] = {"result": self.value} if self.ok else {"error": self.error or "failed"}
        if self.output:
            out["output"] = self.output
        if not self.ok:
            out["calls"] = self.calls
        return out


_UNAWAITED = re.compile(r"<coroutine external_future\(\d+\)>")


def unawaited(value: Any) -> bool:
    """Whether a script's value is (or lists) a ``call_tool(...)`` it forgot to await."""
    items = value if isinstance(value, list | tuple) else [value]
    return any(isinstance(item, str) and _UNAWAITED.fullmatch(item) for item in items)
