"""Paths a server was given that its sandbox does not show, and the line that would.

A server told ``--repository /srv/repo`` whose sandbox does not show ``/srv/repo`` fails in
its own words (``/srv/repo does not exist``), which blame the path, not the sandbox. After a
sandboxed server failed, every path it was given (its command, an argument, an ``env``
value, its ``cwd``) that exists on the host but is not visible inside is named here, with the
exact ``sandbox:`` line that shows it. ``check-config`` asks the same before any start.

A path in the command line is not a grant of its own: the line to add is proposed, never
assumed. Arguments and ``env`` values also come from registry entries and the REST API, an
argument's meaning (a folder to read, to write, or a name to pass on) is the server's, and
the grant list stays the one place that says what a server sees. Only ``cwd`` (one field
that says where the server runs) is shown read-only by itself.

Pure: whether a path exists comes in as ``exists``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Final, Literal

from mcp_aggregator.sandbox.launch_plan import ETC_FILES, SYSTEM_DIRS, Entry

Access = Literal["read", "write"]
_PLAIN: Final = re.compile(r"[A-Za-z0-9_./+@-][A-Za-z0-9_./+@:~-]*")
_READ_ONLY_SAID: Final = ("Read-only file system", "EROFS")
_ALWAYS_SHOWN: Final = ("/proc", "/dev")


@dataclass(frozen=True)
class SandboxHint:
    """One hidden path: where it was given (``args[1]``, ``env.DATA``, ``cwd``, ``command``),
    the access it needs and the ``sandbox:`` line to add, valid YAML as written."""

    path: str
    access: Access
    given_as: str
    grant: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "access": self.access, "given_as": self.given_as, "grant": self.grant}


def grant_line(access: Access, path: str) -> str:
    """``sandbox: {read: [/srv/repo]}``: the path quoted (as JSON, which YAML reads) where
    YAML would read it otherwise."""
    return f"sandbox: {{{access}: [{_quoted(path)}]}}"


def given_paths(entry: Entry) -> list[tuple[str, str]]:
    """``(given_as, value)`` for every value of the entry that may be a path: absolute,
    ``./``, ``../`` or ``~/``, with a folder in it, or a bare name (a path only if it exists);
    ``--flag=PATH`` counts by its value."""
    found: list[tuple[str, str]] = [("command", entry.command)]
    for index, arg in enumerate(entry.args):
        value = arg.partition("=")[2] if arg.startswith("-") else arg
        found.append((f"args[{index}]", value))
    found += [(f"env.{key}", value) for key, value in entry.env.items()]
    if entry.cwd is not None:
        found.append(("cwd", entry.cwd))
    return [(where, value) for where, value in found if _path_like(value) or _word(value)]


def _path_like(value: str) -> bool:
    if not value or "\n" in value or "://" in value or value.startswith("-"):
        return False
    return value.startswith(("/", "./", "../", "~/")) or ("/" in value and " " not in value)


def _word(value: str) -> bool:
    """A bare name (``server.py``, ``.``) that is a path only if it exists where the server
    runs: ``stdio`` or ``UTC`` are not."""
    return bool(value) and "/" not in value and not value.startswith("-") and _PLAIN.fullmatch(value) is not None


def hidden_paths(
    entry: Entry,
    *,
    home: str,
    masked: Sequence[str],
    exists: Callable[[str], bool],
    real: Callable[[str], str] = str,
    home_dir: str = "/",
    stderr: Iterable[str] = (),
) -> list[SandboxHint]:
    """The paths ``entry`` was given that exist on the host but that its sandbox hides,
    each with the line that shows it, in the order given (a path once).

    ``home`` is the server's private home, ``masked`` the gateway's paths hidden even
    inside a grant, ``real`` a path with its symbolic links followed (a runtime folder is
    shown where it really is), ``home_dir`` the operator's home (``~/``). A path that does not exist
    yet counts by its folder, as a write (the server would make it there). A path shown
    read-only that the server said it could not write (``Read-only file system``) needs a
    write grant. A relative path given to a server without a ``cwd`` (it runs in its private
    home) asks for ``cwd:`` the folder it was written for, the gateway's.
    """
    said_read_only = any(marker in line for line in stderr for marker in _READ_ONLY_SAID)
    base = entry.cwd or entry.gateway_cwd
    hints: dict[str, SandboxHint] = {}
    for given_as, value in given_paths(entry):
        path = _absolute(value, base, home_dir)
        access: Access = "read"
        if not exists(path):
            if not _path_like(value):
                continue
            parent = str(PurePosixPath(path).parent)
            if parent == path or not exists(parent):
                continue
            path, access = parent, "write"
        if _visible(path, entry, home, masked) or _visible(real(path), entry, home, masked):
            writable = _within(path, entry.write) or _within(path, (home,))
            if not (said_read_only and not writable and given_as != "command"):
                continue
            access = "write"
        if _relative(value) and entry.cwd is None and not _visible(entry.gateway_cwd, entry, home, masked):
            # Without a cwd the server runs in its private home, where a relative path means
            # nothing: the working directory it was written for is what it needs.
            path, grant = entry.gateway_cwd, f"cwd: {_quoted(entry.gateway_cwd)}"
        else:
            grant = grant_line(access, path)
        if path not in hints:
            hints[path] = SandboxHint(path, access, given_as, grant)
    return list(hints.values())


def _relative(value: str) -> bool:
    return not value.startswith(("/", "~/"))


def _quoted(path: str) -> str:
    return path if _PLAIN.fullmatch(path) else json.dumps(path)


def hint_sentence(hints: Sequence[SandboxHint]) -> str:
    """What the status says: which paths the sandbox hid, and the lines to add."""
    parts = [
        f"{hint.path} ({hint.given_as}) is not {'writable' if hint.access == 'write' else 'visible'} "
        f"in its sandbox: add `{hint.grant}` to its entry"
        for hint in hints
    ]
    return "; ".join(parts)


def _absolute(value: str, base: str, home_dir: str) -> str:
    if value.startswith("~/"):
        value = f"{home_dir.rstrip('/')}/{value[2:]}"
    path = PurePosixPath(base) / value
    parts: list[str] = []
    for part in path.parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def _visible(path: str, entry: Entry, home: str, masked: Sequence[str]) -> bool:
    """Whether the sandbox shows ``path``: within the system's folders, the command's
    runtime, a grant, the working directory or the private home, and not under a mask
    (the data dir) unless a grant inside the mask shows it again."""
    grants = (*entry.read, *entry.write)
    shown = (*SYSTEM_DIRS, *ETC_FILES, *_ALWAYS_SHOWN, *entry.runtime, *grants, home)
    if entry.cwd is not None:
        shown = (*shown, entry.cwd)
    if not _within(path, shown):
        return False
    for mask in masked:
        mask_path = mask.rstrip("/") or "/"
        if _within(path, (mask_path,)) and not _within(path, [g for g in grants if _within(g, (mask_path,))]):
            return False
    return True


def _within(path: str, parents: Iterable[str]) -> bool:
    candidate = PurePosixPath(path)
    return any(candidate == PurePosixPath(p) or PurePosixPath(p) in candidate.parents for p in parents)
