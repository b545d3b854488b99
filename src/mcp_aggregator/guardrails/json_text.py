"""Walking the strings of a JSON value (a result, arguments, a tool definition), and
changing them, without touching its shape: what is masked stays valid JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

_BINARY_TYPES: Final = frozenset(("image", "audio"))
"""Content blocks whose ``data`` is a base64 payload."""

Rewrite = Callable[[str], str | None]
"""The new text for a string, or None to keep it."""


def _skipped(owner: dict[str, Any], key: str) -> bool:
    """Whether ``owner[key]`` is not text a person or model reads: protocol metadata
    (``_meta``), the base64 ``data`` of an image or audio content block, the ``blob`` of a
    resource's contents. Any other ``data`` or ``blob`` (structured content, an argument, a
    schema's property) is read like every other field."""
    if key == "_meta":
        return True
    if key == "data":
        return owner.get("type") in _BINARY_TYPES
    if key == "blob":
        return isinstance(owner.get("uri"), str)
    return False


def strings(value: Any) -> Iterator[str]:
    """Every string value inside ``value`` (dict keys and binary fields skipped)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if not _skipped(value, key):
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
            if _skipped(value, key):
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
