"""Pure naming rules: canonical ``server.tool`` names and client-safe exposed names."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

CLIENT_SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNSAFE_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


def namespace(server: str, tool: str) -> str:
    """The canonical name: ``{server}.{tool}``."""
    return f"{server}.{tool}"


def parse_namespaced(name: str) -> tuple[str, str]:
    """Split at the first dot only: ``server-a.api.v2.create`` -> (``server-a``, ``api.v2.create``).

    Raises ``ValueError`` when ``name`` holds no dot or either side is empty.
    """
    server, dot, tool = name.partition(".")
    if not dot or not server or not tool:
        raise ValueError(f"Not a namespaced name: {name}")
    return server, tool


def exposed_name(server: str, tool: str, *, separator: str = "__", max_length: int = 64) -> str:
    """A name clients accept (``^[a-zA-Z0-9_-]{1,max_length}$`` for the default separator).

    Characters clients reject become ``_``; a name that changed that way or is too long
    gets a hash suffix of the canonical name, so the result is deterministic across
    restarts and two different canonical names never end up equal.
    """
    raw = f"{server}{separator}{tool}"
    safe = _UNSAFE_CHARS.sub("_", tool)
    candidate = f"{server}{separator}{safe}"
    if candidate == raw and len(candidate) <= max_length:
        return candidate
    digest = hashlib.sha256(namespace(server, tool).encode()).hexdigest()[:_HASH_LENGTH]
    suffix = f"_{digest}"
    if len(candidate) + len(suffix) <= max_length and candidate != raw:
        return candidate + suffix
    budget = max_length - len(suffix)
    return candidate[:budget] + suffix


def assign_exposed_names(
    pairs: Iterable[tuple[str, str]], *, separator: str = "__", max_length: int = 64, keep_unique: bool = False
) -> dict[tuple[str, str], str]:
    """Exposed names for every (server, tool); unique even if two sanitise to the same text.

    ``keep_unique``: a tool name only one server has, already client-safe and not of the
    ``server<sep>tool`` shape, is exposed as it is; the rest are namespaced.
    """
    unique = set(pairs)
    out: dict[tuple[str, str], str] = {}
    taken: dict[str, tuple[str, str]] = {}
    if keep_unique:
        counts: dict[str, int] = {}
        for _, tool in unique:
            counts[tool] = counts.get(tool, 0) + 1
        for server, tool in sorted(unique):
            if counts[tool] == 1 and CLIENT_SAFE.match(tool) and len(tool) <= max_length and separator not in tool:
                out[(server, tool)] = tool
                taken[tool] = (server, tool)
        unique -= set(out)
    for server, tool in sorted(unique):
        name = exposed_name(server, tool, separator=separator, max_length=max_length)
        if name in taken:
            # Only possible when a tool's literal name equals another's sanitised form;
            # salting with the canonical name keeps it deterministic.
            digest = hashlib.sha256(f"{server}.{tool}#2".encode()).hexdigest()[:_HASH_LENGTH]
            name = f"{name[: max_length - _HASH_LENGTH - 1]}_{digest}"
        taken[name] = (server, tool)
        out[(server, tool)] = name
    return out
