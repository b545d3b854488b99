"""Values crossing the sandbox wall: tool results going in, a script's value coming out."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import mcp_types as types


def tool_value(result: types.CallToolResult) -> Any:
    """What ``call_tool`` returns for a successful call.

    The structured content when the tool has one (the SDK's ``{"result": value}`` wrapper
    unwrapped, as the facades do and the signature shows), else the text blocks joined by
    newlines; a result with no text at all gives its content blocks in wire form.
    """
    structured = result.structured_content
    if structured is not None:
        if len(structured) == 1 and "result" in structured:
            return structured["result"]
        return structured
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if texts or not result.content:
        return "\n".join(texts)
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def tool_error_text(result: types.CallToolResult) -> str:
    """The message of a tool's error result (its text, or a note that it gave none)."""
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent)).strip()
    return text or "the tool reported an error without a message"


def jsonable(value: Any, depth: int = 0) -> Any:
    """A script's value as plain JSON data.

    Tuples and sets become lists (sets sorted when they can be), bytes base64, dates ISO
    strings, non-finite floats strings, objects of the script's own classes their
    attributes; anything else its ``str``. Nesting deeper than 100 is cut with a marker.
    """
    if depth > 100:
        return "…"
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        items = [jsonable(item, depth + 1) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    attributes = getattr(value, "attributes", None)  # a MontyClassProxy: an instance of a script's class
    if isinstance(attributes, Mapping):
        return {str(key): jsonable(item, depth + 1) for key, item in attributes.items()}
    return str(value)


def dumps(value: Any) -> str:
    """Compact JSON with raw UTF-8: every byte becomes model tokens."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
