"""Walking the strings of a JSON value (a result, arguments, a tool definition), and
changing them, without touching its shape: what is masked stays valid JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

_BINARY_KEYS: Final = frozenset(("data", "blob", "_meta"))
"""Fields that carry base64 payloads or protocol metadata, not text a person or model reads."""

Rewrite = Callable[[str], str | None]
"""The new text for a string, or None to keep it."""


def strings(value: Any) -> Iterator[str]:
    """Every string value inside ``value`` (dict keys and binary fields skipped)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in _BINARY_KEYS:
                yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def rewritten(value: Any, rewrite: Rewrite) -> Any:
    """``value`` with each string ``rewrite`` changes replaced; the very same object when none is."""
    if isinstance(value, str):
        new = rewrite(value)
        return value if new is None else new
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for key, item in value.items():
            if key in _BINARY_KEYS:
                continue
            new_item = rewritten(item, rewrite)
            if new_item is not item:
                out = dict(value) if out is None else out
                out[key] = new_item
        return value if out is None else out
    if isinstance(value, list):
        items = [rewritten(item, rewrite) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
