"""What a script came to, as the model reads it back; and the sandbox's errors made readable."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic_monty import MontyCrashedError, MontyError, MontyRuntimeError, MontySyntaxError

from mcp_aggregator.code_mode.config import CodeLimits


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


def describe(exc: MontyError, limits: CodeLimits) -> tuple[str, int | None]:
    """``(message, line)`` for an error the sandbox raised, naming the limit that stopped
    the script when one did. The line is the innermost frame of the script's traceback."""
    if isinstance(exc, MontyCrashedError):
        return f"the sandbox worker stopped ({exc}); it has been replaced, run the script again", None
    line = None
    if isinstance(exc, MontySyntaxError | MontyRuntimeError):
        frames = exc.traceback()
        if frames:
            line = frames[-1].line
        message = exc.display("type-msg")
    else:
        message = str(exc)
    return message + _limit_hint(message, limits), line


def _limit_hint(message: str, limits: CodeLimits) -> str:
    if message.startswith("TimeoutError: feed time limit"):
        return f" (code_mode.limits.cpu_secs = {limits.cpu_secs:g})"
    if message.startswith("MemoryError: memory limit exceeded"):
        if message.endswith(f"> {limits.output_bytes} bytes"):
            return f" (printed output over code_mode.limits.output_bytes = {limits.output_bytes})"
        return f" (code_mode.limits.memory_bytes = {limits.memory_bytes})"
    if message.startswith("RecursionError"):
        return f" (code_mode.limits.recursion_depth = {limits.recursion_depth})"
    if message.startswith("TypeError: 'coroutine' object"):
        return " (call_tool must be awaited: `await call_tool(name, {...})`)"
    if message.startswith("RuntimeError: suspension limit"):
        return f" (too many calls and waits; code_mode.limits.tool_calls = {limits.tool_calls})"
    return ""
