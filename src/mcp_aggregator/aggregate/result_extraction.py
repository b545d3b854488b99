"""Turning one server's ``CallToolResult`` into individual results.

Rules, in order:
- ``structured_content``, when present, is the source and text blocks are ignored (by the
  MCP spec the text is a serialisation of it, so reading both would double every result);
- otherwise each text block (and each text resource) is a source; a block that parses as
  JSON is treated like structured content, any other text is one result;
- a JSON array gives one result per element; an object holding an array under a known key
  (``results``, ``items``, ``entities``, ...) gives one per element of the first such key;
  the SDK's ``{"result": ...}`` wrapper is unwrapped; any other value is one result;
- a string element is the content as-is, anything else its compact JSON; a text made only
  of paths or URLs, one per line (what file search tools print), is one result per line;
  a text that only says nothing was found ("No matches found") is no result, and so is
  ``{"content": <such text>}``, the shape of server-filesystem's structured output;
- a timestamp inside an object element (``timestamp``, ``updated_at``, ``date``, ...)
  becomes the result's source time for freshness.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any, NamedTuple

import mcp_types

LIST_KEYS: tuple[str, ...] = (
    "results",
    "items",
    "entities",
    "documents",
    "docs",
    "hits",
    "matches",
    "records",
    "entries",
    "nodes",
    "data",
    "result",
)
TIMESTAMP_KEYS: tuple[str, ...] = (
    "timestamp",
    "updated_at",
    "updatedAt",
    "last_modified",
    "lastModified",
    "modified",
    "published_at",
    "publishedAt",
    "created_at",
    "createdAt",
    "date",
    "time",
)
_EPOCH_MILLIS_THRESHOLD = 1e11
_NOTHING_FOUND = re.compile(
    r"\s*(?:no (?:matches|results|matching \w+|\w+ found|entries|items|documents)(?: found)?|nothing found|"
    r"0 results(?: found)?)\.?\s*$",
    re.IGNORECASE,
)
_PATH_LINE = re.compile(r"(?:/|\./|~/|[A-Za-z]:\\|[a-z][a-z0-9+.-]*://)\S")


class RawResult(NamedTuple):
    """One result as extracted, before ranking.

    ``content`` may be truncated; ``original_length`` is the length before truncation so
    the length penalty still sees how long the answer really was.
    """

    server: str
    content: str
    retrieved_at: datetime
    source_time: datetime | None
    original_length: int


def extract_results(
    result: mcp_types.CallToolResult, *, server: str, retrieved_at: datetime, max_chars: int
) -> list[RawResult]:
    """Split a successful tool result into results (see the module docstring)."""
    if result.structured_content is not None:
        items = _items_of(result.structured_content)
    else:
        items = []
        for text in _texts(result.content):
            parsed = _parse_json(text) if _looks_like_json(text) else _NOT_JSON
            items.extend([text] if parsed is _NOT_JSON else _items_of(parsed))
    out: list[RawResult] = []
    for item in _split_texts(items):
        content = item.strip() if isinstance(item, str) else _compact_json(item)
        if not content:
            continue
        out.append(
            RawResult(
                server=server,
                content=_truncate(content, max_chars),
                retrieved_at=retrieved_at,
                source_time=_source_time(item),
                original_length=len(content),
            )
        )
    return out


def error_text(result: mcp_types.CallToolResult) -> str:
    """The message of an ``isError`` result: its text blocks joined, or a fallback."""
    text = " ".join(" ".join(_texts(result.content)).split())
    return text or "tool returned an error"


def _texts(blocks: list[mcp_types.ContentBlock]) -> list[str]:
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
            block.resource, mcp_types.TextResourceContents
        ):
            texts.append(block.resource.text)
    return texts


def _looks_like_json(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith(("[", "{"))


_NOT_JSON = object()


def _parse_json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _split_texts(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and set(item) == {"content"} and isinstance(item["content"], str):
            item = item["content"]
        if not isinstance(item, str):
            out.append(item)
        elif _NOTHING_FOUND.match(item):
            continue
        else:
            lines = [line.strip() for line in item.splitlines() if line.strip()]
            out.extend(lines if len(lines) > 1 and all(_PATH_LINE.match(line) for line in lines) else [item])
    return out


def _items_of(value: object) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in LIST_KEYS:
            inner = value.get(key)
            if isinstance(inner, list):
                return inner
        if set(value) == {"result"}:
            return _items_of(value["result"]) if isinstance(value["result"], dict | list) else [value["result"]]
    return [value]


def _compact_json(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, int | float | bool):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _truncate(content: str, max_chars: int) -> str:
    if len(content) <= max_chars:
        return content
    marker = f" … [truncated {len(content) - max_chars} chars]"
    return content[: max(0, max_chars - len(marker))] + marker


def _source_time(item: object) -> datetime | None:
    if not isinstance(item, dict):
        return None
    for key in TIMESTAMP_KEYS:
        if key in item:
            parsed = parse_timestamp(item[key])
            if parsed is not None:
                return parsed
    return None


def parse_timestamp(value: object) -> datetime | None:
    """An aware UTC datetime from ISO 8601 text or epoch seconds/milliseconds, else None.

    Naive times are taken as UTC.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        seconds = value / 1000 if abs(value) >= _EPOCH_MILLIS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return None
