"""The bench's subprocesses: start and always end them, wait until they serve, and read
their CPU time and memory from ``/proc``."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.ports import free_port as free_port  # the bench's paths take their ports from here

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
UPSTREAM_SCRIPT = "echo_server.py"


class BenchError(Exception):
    """A path could not be set up or measured; its rows are reported as failed."""


def raise_fd_limit() -> int:
    """Lift the soft open-files limit to the hard one; subprocesses inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def child_env(**extra: str) -> dict[str, str]:
    """The bench's environment with this checkout's ``src`` first, so the gateway under test
    is the worktree's code whatever the shared venv has installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


@contextlib.contextmanager
def managed_process(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` in its own process group; always end it (terminate, wait, kill)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(env) if env is not None else child_env(),
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        # Children it left behind (a stdio upstream of a proxy) share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def log_tail(log: Path, lines: int = 12) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise BenchError(f"process exited with {proc.returncode} before listening:\n{log_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise BenchError(f"port {port} not listening after {deadline_s:.0f} s:\n{log_tail(log)}")


def wait_for_http(url: str, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 40.0) -> None:
    """Poll ``GET url`` until it answers 200 (a proxy's liveness route)."""
    end = time.monotonic() + deadline_s
    last = "no answer"
    with httpx.Client(timeout=1.0) as http:
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise BenchError(f"process exited with {proc.returncode} before ready:\n{log_tail(log)}")
            try:
                status = http.get(url).status_code
                if status == 200:
                    return
                last = f"HTTP {status}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            time.sleep(0.1)
    raise BenchError(f"GET {url} not 200 after {deadline_s:.0f} s (last: {last}):\n{log_tail(log)}")


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which say what actually failed."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_exceptions(inner)]
    return [exc]


def describe(exc: BaseException) -> str:
    """One line per distinct leaf error: type, first and last line of its message."""
    seen: list[str] = []
    for leaf in leaf_exceptions(exc):
        lines = [line.strip() for line in str(leaf).splitlines() if line.strip()]
        text = "" if not lines else lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        item = f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
        if item not in seen:
            seen.append(item)
    return "; ".join(seen)


# ---------------------------------------------------------------- /proc


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, utime+stime ticks), or None if the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def descendants(root: int) -> list[int]:
    """Every live process below ``root``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents.setdefault(stat[0], []).append(int(entry))
    found: list[int] = []
    frontier = [root]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found.extend(children)
        frontier.extend(children)
    return found


_FOREIGN: set[int] = set()
"""Children the host process had before the bench began (a test runner's), other than echo
upstreams: never counted as the proxy under test."""


def ignore_existing_children() -> None:
    """Call once before measuring: processes already running are not the bench's."""
    _FOREIGN.update(descendants(os.getpid()))


@dataclass(frozen=True)
class ProcessSet:
    """The bench's descendants, split into the echo upstream(s) and the proxy under test."""

    proxy: tuple[int, ...]
    upstream: tuple[int, ...]

    @classmethod
    def of_bench(cls) -> ProcessSet:
        """Classify by script: ``echo_server.py`` is the upstream; py-spy is neither; the rest
        (the gateway, a peer proxy, and anything they spawn besides the echo) is the proxy."""
        proxy: list[int] = []
        upstream: list[int] = []
        for pid in descendants(os.getpid()):
            argv = _argv(pid)
            if any(arg.endswith(UPSTREAM_SCRIPT) for arg in argv[:2]):
                upstream.append(pid)
            elif argv and not argv[0].endswith("py-spy") and pid not in _FOREIGN:
                proxy.append(pid)
        return cls(tuple(proxy), tuple(upstream))


def cpu_seconds(pids: Sequence[int]) -> float:
    return sum(stat[1] for pid in pids if (stat := _stat(pid)) is not None) / CLK_TCK


def rss_bytes(pids: Sequence[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


class RssSampler:
    """Peak summed RSS of ``pids``, sampled from a thread while the block runs."""

    def __init__(self, pids: Sequence[int], interval_s: float = 0.05) -> None:
        self._pids = tuple(pids)
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self.peak = rss_bytes(self._pids)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak = max(self.peak, rss_bytes(self._pids))

    def __enter__(self) -> RssSampler:
        if self._pids:
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.peak = max(self.peak, rss_bytes(self._pids))
