"""The response envelope every facade command answers with.

Wire shape (keys that do not apply are omitted, never sent as ``null``)::

    success: {"ok": true,  "cmd": "<echoed>", "data": ..., "count": n}   count only for lists
    failure: {"ok": false, "cmd": "<echoed>", "error": "..."}

``cmd`` is the command exactly as the caller sent it, so an LLM juggling several calls can
correlate answers. ``count`` appears when ``data`` is list-like: a JSON array, a page
(``{"items": [...], "nextCursor": "..."}``) or an object around one main list (aggregator
results); it gives that list's length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a paginated list; ``next_cursor`` is None on the last page."""

    items: Sequence[Any]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Counted:
    """A list-like result that is not a bare list (e.g. results plus metadata) and its count."""

    data: Any
    count: int


@dataclass(frozen=True, slots=True)
class Envelope:
    """A facade response. Build it with ``success`` or ``failure``, send ``to_dict()``."""

    ok: bool
    cmd: str
    data: Any = None
    count: int | None = None
    error: str | None = None

    @classmethod
    def success(cls, cmd: str, data: Any) -> Envelope:
        """Wrap a handler's result; lists, ``Listing`` pages and ``Counted`` get a ``count``."""
        if isinstance(data, Counted):
            return cls(ok=True, cmd=cmd, data=data.data, count=data.count)
        if isinstance(data, Listing):
            page: dict[str, Any] = {"items": list(data.items)}
            if data.next_cursor is not None:
                page["nextCursor"] = data.next_cursor
            return cls(ok=True, cmd=cmd, data=page, count=len(data.items))
        if isinstance(data, list | tuple):
            return cls(ok=True, cmd=cmd, data=list(data), count=len(data))
        return cls(ok=True, cmd=cmd, data=data)

    @classmethod
    def failure(cls, cmd: str, error: str) -> Envelope:
        return cls(ok=False, cmd=cmd, error=error)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "cmd": self.cmd}
        if self.ok:
            out["data"] = self.data
            if self.count is not None:
                out["count"] = self.count
        else:
            out["error"] = self.error or "failed"
        return out


def dumps(envelope: dict[str, Any]) -> str:
    """Compact JSON: no spaces and raw UTF-8, because every byte becomes LLM tokens."""
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), default=str)


def to_call_tool_result(envelope: dict[str, Any]) -> types.CallToolResult:
    """The MCP result for a facade call: the envelope as one text block, ``is_error`` mirrors ``ok``.

    No ``structured_content``: clients forward both to the model, which would pay twice.
    """
    return types.CallToolResult(
        content=[types.TextContent(text=dumps(envelope))],
        is_error=not envelope.get("ok", False),
    )


def content_text(result: types.CallToolResult) -> str:
    """The text blocks of an upstream result joined by newlines (other blocks are skipped)."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def render_call_result(result: types.CallToolResult, *, full: bool) -> Any:
    """The ``data`` of an executed tool.

    Structured content wins when present; a single text block becomes a plain string; other
    mixes become a list of content blocks as the wire shows them. ``full`` always returns
    the whole result (content, structuredContent, _meta) in wire form.
    """
    if full:
        return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"result_type"})
    structured = result.structured_content
    if structured is not None:
        # Servers built on the SDK wrap a plain return value as {"result": value}; the
        # wrapper carries nothing, and the model pays for it on every call.
        if len(structured) == 1 and "result" in structured:
            return structured["result"]
        return structured
    if len(result.content) == 1 and isinstance(result.content[0], types.TextContent):
        return result.content[0].text
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
