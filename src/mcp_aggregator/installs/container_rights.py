"""Which of an OCI entry's fixed ``runtimeArguments`` widen what its container may do (pure).

An OCI server runs in its container instead of the gateway's sandbox, so the arguments
``docker run`` gets are its sandbox: an entry whose ``runtimeArguments`` say
``--privileged`` or ``-v /:/host`` would be handed the host. Such an argument is refused
unless the operator allows it by name at install (``--allow-runtime-arg``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

_NAMESPACES: Final = {"--pid": "pid", "--ipc": "IPC", "--uts": "UTS", "--network": "network", "--net": "network"}
_NAMESPACES_USER: Final = {"--userns": "user"}
_SOCKETS: Final = ("docker.sock", "podman.sock", "containerd.sock")
_WITH_VALUE: Final = frozenset(
    {
        "--cap-add", "--device", "--security-opt", "-v", "--volume", "--mount", "--volumes-from",
        *_NAMESPACES, *_NAMESPACES_USER,
    }
)  # fmt: skip


@dataclass(frozen=True)
class Widening:
    """One argument (as the entry gives it, its value included) and what it would allow."""

    argument: str
    why: str


def widening_arguments(args: Sequence[str], *, home: str, data_dir: str) -> list[Widening]:
    """The arguments of ``args`` (``docker run``'s options, before the image) that give the
    container more than its own namespaces: ``--privileged``, ``--cap-add``, a host
    namespace (``--pid/--ipc/--uts/--network/--userns host``), ``--device``,
    ``--security-opt``, ``--volumes-from``, and a mount of ``/``, the home, the data dir
    (or a folder holding either, or inside either) or a container engine's socket."""
    found: list[Widening] = []
    index = 0
    while index < len(args):
        arg = args[index]
        flag, eq, value = arg.partition("=")
        shown = arg
        if not eq and flag in _WITH_VALUE and index + 1 < len(args):
            value = args[index + 1]
            shown = f"{arg} {value}"
            index += 1
        index += 1
        why = _why(flag, value, home=home, data_dir=data_dir)
        if why is not None:
            found.append(Widening(shown, why))
    return found


def _why(flag: str, value: str, *, home: str, data_dir: str) -> str | None:
    if flag == "--privileged" and value.lower() not in ("false", "0"):
        return "gives the container every capability and the host's devices"
    if flag == "--cap-add":
        return f"adds the capability {value}"
    if flag in _NAMESPACES and value == "host":
        return f"shares the host's {_NAMESPACES[flag]} namespace"
    if flag in _NAMESPACES_USER and value == "host":
        return "shares the host's user namespace"
    if flag == "--device":
        return "passes a host device into the container"
    if flag == "--security-opt":
        return "changes the container's security profile"
    if flag == "--volumes-from":
        return "mounts another container's volumes"
    if flag in ("-v", "--volume", "--mount"):
        source = _mount_source(flag, value)
        if source is not None:
            return _mount_why(source, home=home, data_dir=data_dir)
    return None


def _mount_source(flag: str, value: str) -> str | None:
    """The host path a mount shows (None: a named volume or a tmpfs)."""
    if flag == "--mount":
        fields = dict(part.partition("=")[::2] for part in value.split(","))
        source = fields.get("source") or fields.get("src")
        return source if source and source.startswith("/") else None
    source = value.split(":", 1)[0]
    return source if source.startswith("/") else None


def _mount_why(source: str, *, home: str, data_dir: str) -> str | None:
    path = PurePosixPath(source)
    if path == PurePosixPath("/"):
        return "mounts the host's root filesystem"
    if path.name in _SOCKETS:
        return "mounts a container engine's socket (the host, in effect)"
    for what, folder in (("the home", home), ("the gateway's data dir", data_dir)):
        other = PurePosixPath(folder)
        if path == other or path in other.parents or other in path.parents:
            return f"mounts {what} ({folder}) or a folder holding or inside it"
    return None
