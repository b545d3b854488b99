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
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Final

import anyio

from mcp_aggregator.sandbox.sandbox_policy import Limits

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
_GROUP: Final = "mcp-aggregator"
_serial = itertools.count(1)
_REMOVE_TRIES: Final = 16
_REMOVE_PAUSE_SECS: Final = 0.01
_REMOVE_MAX_PAUSE_SECS: Final = 0.25
_held: set[str] = set()
"""This process's leaves in use (made, not yet removed): never swept."""
_SWEEP_EVERY_SECS: Final = 60.0
_last_sweep: float | None = None


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
        leaf = f"{server}-{os.getpid()}-{next(_serial)}"  # the pid lets a later sweep tell it stale
        self.leaf = leaf
        if version == "v2":
            self._dirs = {"memory": root / _GROUP / leaf, "pids": root / _GROUP / leaf}
        else:
            self._dirs = {"memory": root / "memory" / _GROUP / leaf, "pids": root / "pids" / _GROUP / leaf}
        self._root = root
        self._baseline: dict[str, int] = {}

    def create(self) -> None:
        """Raises OSError when the cgroup cannot be made or limited."""
        _sweep_now_and_then(self.version, self._root)
        _held.add(self.leaf)
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
                pause = _REMOVE_PAUSE_SECS
                for _ in range(_REMOVE_TRIES):
                    self._kill_rest(path)
                    try:
                        path.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        await anyio.sleep(pause)
                        pause = min(pause * 2, _REMOVE_MAX_PAUSE_SECS)
            # Left behind only if it would not empty in ~3 s: no longer held, the next sweep takes it.
            _held.discard(self.leaf)

    def _kill_rest(self, path: Path) -> None:
        if self.version == "v2":
            with suppress(OSError):
                (path / "cgroup.kill").write_text("1")
            return
        for pid in _read(path / "cgroup.procs").split():
            with suppress(OSError, ValueError):
                os.kill(int(pid), 9)


def _leaf_pid(name: str) -> int | None:
    """The gateway pid in a leaf's name (``<server>-<pid>-<serial>``), or None."""
    parts = name.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (not ours to signal)
    return True


def stale(name: str, own_pid: int, held: set[str], alive: Callable[[int], bool] = _alive) -> bool:
    """Whether leaf ``name`` is left over: made by a gateway process that is gone, or by this
    one and no longer in use. A leaf whose name carries no pid is someone else's: kept."""
    pid = _leaf_pid(name)
    if pid is None:
        return False
    if pid == own_pid:
        return name not in held
    return not alive(pid)


def _sweep_now_and_then(version: str, root: Path) -> None:
    """Sweep at the first start and then at most once a minute: a start of fifty servers
    would otherwise read every leftover leaf fifty times on the event loop."""
    global _last_sweep  # one clock for the process, like _held
    now = time.monotonic()
    if _last_sweep is None or now - _last_sweep >= _SWEEP_EVERY_SECS:
        _last_sweep = now
        sweep(version, root)


def sweep(version: str, root: Path = CGROUP_ROOT) -> int:
    """Remove the stale, empty leaves under our group; how many went. The kernel refuses to
    remove a cgroup with a process in it, so a leaf in use is never lost (a pid reused by
    another process only keeps a stale leaf a while longer)."""
    parents = [root / _GROUP] if version == "v2" else [root / "memory" / _GROUP, root / "pids" / _GROUP]
    removed = 0
    for parent in parents:
        try:
            leaves = [entry for entry in parent.iterdir() if entry.is_dir()]
        except OSError:
            continue
        for leaf in leaves:
            if stale(leaf.name, os.getpid(), _held) and not _read(leaf / "cgroup.procs").strip():
                with suppress(OSError):
                    leaf.rmdir()
                    removed += 1
    return removed


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
