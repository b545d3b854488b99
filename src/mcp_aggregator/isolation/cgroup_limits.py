"""Memory and process limits of one sandboxed server, enforced by a cgroup of its own.

We run as root (so does CI), where ``RLIMIT_NPROC`` does not apply and ``RLIMIT_AS`` breaks
node's V8 (it reserves far more address space than it uses): a cgroup is the one kernel
limit that holds for both. cgroup v2 (``memory.max``, ``pids.max``, ``memory.oom.group``
so an out-of-memory kill takes the whole server) where ``/sys/fs/cgroup`` is the unified
hierarchy and writable; cgroup v1's ``memory`` and ``pids`` controllers otherwise. CPU time
is ``RLIMIT_CPU`` (per process, which root cannot escape), set on the server by the launcher.
"""

from __future__ import annotations

import itertools
import os
from contextlib import suppress
from pathlib import Path
from typing import Final

import anyio

from mcp_aggregator.isolation.sandbox_policy import Limits

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
_GROUP: Final = "mcp-aggregator"
_serial = itertools.count(1)
_REMOVE_TRIES: Final = 50
_REMOVE_PAUSE_SECS: Final = 0.02


def cgroup_version(root: Path = CGROUP_ROOT) -> str | None:
    """``"v2"`` or ``"v1"`` where we can make cgroups with memory and pids limits, else None."""
    if (root / "cgroup.controllers").exists():
        try:
            controllers = (root / "cgroup.controllers").read_text().split()
        except OSError:
            return None
        if {"memory", "pids"} <= set(controllers) and _can_make(root / _GROUP):
            return "v2"
        return None
    if _can_make(root / "memory" / _GROUP) and _can_make(root / "pids" / _GROUP):
        return "v1"
    return None


def _can_make(path: Path) -> bool:
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK)


def counter(text: str, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``memory.events``, ``pids.events``)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


class CgroupLimits:
    """One server's cgroup: made with its limits, the server added before it runs, read
    after it ended (which limit was hit), removed at the end."""

    def __init__(self, version: str, server: str, limits: Limits, root: Path = CGROUP_ROOT) -> None:
        self.version = version
        self.limits = limits
        leaf = f"{server}-{os.getpid()}-{next(_serial)}"
        if version == "v2":
            self._dirs = {"memory": root / _GROUP / leaf, "pids": root / _GROUP / leaf}
        else:
            self._dirs = {"memory": root / "memory" / _GROUP / leaf, "pids": root / "pids" / _GROUP / leaf}
        self._root = root
        self._baseline: dict[str, int] = {}

    def create(self) -> None:
        """Raises OSError when the cgroup cannot be made or limited."""
        if self.version == "v2":
            for parent in (self._root, self._root / _GROUP):
                with suppress(OSError):  # enabled already, or set by whoever delegated to us
                    (parent / "cgroup.subtree_control").write_text("+memory +pids")
        for path in set(self._dirs.values()):
            path.mkdir(exist_ok=True)
        memory, pids = self._dirs["memory"], self._dirs["pids"]
        if self.limits.memory_mb is not None:
            size = str(self.limits.memory_mb << 20)
            if self.version == "v2":
                (memory / "memory.max").write_text(size)
                with suppress(OSError):
                    (memory / "memory.swap.max").write_text("0")
                (memory / "memory.oom.group").write_text("1")
            else:
                (memory / "memory.limit_in_bytes").write_text(size)
                with suppress(OSError):  # absent without swap accounting
                    (memory / "memory.memsw.limit_in_bytes").write_text(size)
        if self.limits.processes is not None:
            (pids / "pids.max").write_text(str(self.limits.processes))
        # A leaf of the same name left behind (a pid reused) keeps its counters: only a rise counts.
        self._baseline = self._counters()

    def _counters(self) -> dict[str, int]:
        memory, pids = self._dirs["memory"], self._dirs["pids"]
        events = "memory.events" if self.version == "v2" else "memory.oom_control"
        return {
            "memory": counter(_read(memory / events), "oom_kill"),
            "processes": counter(_read(pids / "pids.events"), "max"),
        }

    def add(self, pid: int) -> None:
        for path in set(self._dirs.values()):
            (path / "cgroup.procs").write_text(str(pid))

    def hit(self) -> str | None:
        """Which limit the server ran into since it started: ``"memory"``, ``"processes"``
        or None. Running into one is not being ended by it (a refused fork is survivable):
        the caller judges by the exit status."""
        now = self._counters()
        for which in ("memory", "processes"):
            if now[which] > self._baseline.get(which, 0):
                return which
        return None

    async def remove(self) -> None:
        """Kill what is left in the cgroup and remove it. The server's processes are gone or
        going (their namespace's first process ended); the kernel refuses to remove a cgroup
        until the last is reaped, so this retries for a moment, then leaves it (empty) behind."""
        with anyio.CancelScope(shield=True):  # runs as the server's connection is cancelled
            for path in set(self._dirs.values()):
                for _ in range(_REMOVE_TRIES):
                    self._kill_rest(path)
                    try:
                        path.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        await anyio.sleep(_REMOVE_PAUSE_SECS)

    def _kill_rest(self, path: Path) -> None:
        if self.version == "v2":
            with suppress(OSError):
                (path / "cgroup.kill").write_text("1")
            return
        for pid in _read(path / "cgroup.procs").split():
            with suppress(OSError, ValueError):
                os.kill(int(pid), 9)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
