"""Which directories a command needs to run, beyond the system's: its own installation.

``.venv/bin/python`` needs the virtualenv and the interpreter it links to (say
``~/.pyenv/versions/3.11.7``); ``node_modules/.bin/mcp-server-memory`` needs
``node_modules``; a script needs the interpreter of its ``#!`` line. Each is the *prefix*
of a file on the way (the folder above ``bin/``), read-only inside the sandbox. A prefix
that is the operator's home, or a folder right in it (``~/.local``), is never shown whole:
only the file itself is.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from mcp_aggregator.sandbox.launch_plan import SYSTEM_DIRS

_BIN_DIRS: Final = frozenset({"bin", "sbin", ".bin"})
_MAX_HOPS: Final = 8


def prefix_of(path: Path, home: Path) -> Path:
    """The installation a file belongs to: the folder above ``bin``, else its folder; the
    file alone where that would be the home, a folder right in it, or ``/``."""
    parent = path.parent
    prefix = parent.parent if parent.name in _BIN_DIRS else parent
    if prefix in (Path("/"), home) or prefix.parent == home:
        return path
    return prefix


def is_system(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


def runtime_paths(command: str, home: Path | None = None) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The read-only folders ``command`` (absolute) needs, outside the system's, and the
    links (``(link, target)``) through which it reaches them (``.venv`` -> elsewhere): a
    link is shown as a link, its target as a folder."""
    home = home or Path.home()
    found: dict[str, None] = {}
    pending = [Path(command)]
    seen: set[Path] = set()
    while pending and len(seen) < _MAX_HOPS * 4:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for hop in _hops(path):
            if not is_system(hop):
                prefix = prefix_of(hop, home)
                found[str(prefix)] = None
                found[os.path.realpath(prefix)] = None
                venv = prefix_of(hop, home) / "pyvenv.cfg"
                pending += _venv_home(venv)
        pending += _interpreter(Path(os.path.realpath(path)))
    folders: dict[str, None] = {}
    links: dict[tuple[str, str], None] = {}
    for item in found:
        if not Path(item).exists():
            continue
        real = os.path.realpath(item)
        folders[real] = None
        if real != item:
            links.update(dict.fromkeys(_links_on_the_way(Path(item))))
    return tuple(folders), tuple(links)


def _links_on_the_way(path: Path) -> list[tuple[str, str]]:
    """The symbolic links among ``path``'s folders (``/repo/.venv`` -> ``/elsewhere/.venv``)."""
    found = []
    for part in [*reversed(path.parents), path]:
        if part.is_symlink():
            found.append((str(part), os.readlink(part)))
    return found


def _hops(path: Path) -> list[Path]:
    """``path`` and every file its symlinks lead through, to the real file."""
    hops = [path]
    for _ in range(_MAX_HOPS):
        if not path.is_symlink():
            break
        path = path.parent / os.readlink(path)
        hops.append(Path(os.path.normpath(path)))
    real = Path(os.path.realpath(hops[-1]))
    if real not in hops:
        hops.append(real)
    return hops


def _venv_home(cfg: Path) -> list[Path]:
    try:
        text = cfg.read_text()
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return [Path(value.strip()) / "python"]
    return []


def _interpreter(path: Path) -> list[Path]:
    """The ``#!`` interpreter of a script (through ``/usr/bin/env``), if any."""
    try:
        with path.open("rb") as file:
            head = file.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return []
    if Path(words[0]).name == "env" and len(words) > 1:
        words = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(words[0]) if words else None
        return [Path(found)] if found else []
    return [Path(words[0])]
