"""Sampling the gateway with py-spy while one row runs, and the frames that dominate."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .procs import managed_process


def find_py_spy() -> str | None:
    for candidate in (shutil.which("py-spy"), str(Path(sys.executable).parent / "py-spy")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


FRAME_FILE = re.compile(r"\(([^:()]+):\d+\)$")


def package_of(frame: str) -> str:
    """``mcp/server``, ``mcp_aggregator/relay``, ``anyio``, ``asyncio``... of a py-spy frame."""
    match = FRAME_FILE.search(frame)
    parts = (match.group(1) if match else frame).split("/")
    return "/".join(parts[:2]) if parts[0] in ("mcp", "mcp_aggregator") and len(parts) > 2 else parts[0]


def summarize_collapsed(
    text: str, top: int = 20
) -> tuple[list[tuple[float, str]], list[tuple[float, str]], list[tuple[float, str]]]:
    """(self by package, self by frame, inclusive by frame): percent of samples, from py-spy's
    collapsed stacks; the inclusive list leaves out the trunk (frames on nearly every sampled stack)."""
    total = 0
    packages: dict[str, int] = {}
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + count
        package = package_of(frames[-1])
        packages[package] = packages.get(package, 0) + count
        for frame in set(frames[1:]):
            inclusive[frame] = inclusive.get(frame, 0) + count
    if not total:
        return [], [], []

    def ranked(counts: dict[str, int], below: float = 101.0) -> list[tuple[float, str]]:
        shares = [(round(100 * n / total, 1), frame) for frame, n in counts.items()]
        return sorted((s for s in shares if s[0] < below), key=lambda s: -s[0])[:top]

    trunk = 0.98 * max(inclusive.values()) * 100 / total
    return ranked(packages), ranked(own), ranked(inclusive, below=trunk)


@contextlib.contextmanager
def profiling(pid: int, out: Path, log: Path) -> Iterator[list[str]]:
    """Record ``pid`` while the block runs; the yielded list receives the summary lines."""
    summary: list[str] = []
    py_spy = find_py_spy()
    if py_spy is None:
        summary.append("py-spy not found (pip install py-spy); no profile")
        yield summary
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    # --gil keeps the samples where the gateway runs Python (holds the GIL): on a shared
    # machine, samples of a descheduled or blocked process would otherwise swamp the profile.
    argv = [py_spy, "record", "--pid", str(pid), "--rate", "500", "--gil", "--nonblocking"]
    argv += ["--format", "raw", "-o", str(out)]
    with managed_process(argv, log) as proc:
        time.sleep(1.0)
        try:
            yield summary
        finally:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
    if not out.exists():
        summary.append(f"py-spy wrote no profile: {log.read_text(errors='replace')[-500:]}")
        return
    packages, own, inclusive = summarize_collapsed(out.read_text())
    summary.append(f"profile (collapsed stacks, samples holding the GIL) in {out}")
    summary.append("self time by package, % of samples:")
    summary.extend(f"  {share:5.1f} %  {package}" for share, package in packages)
    summary.append("self time by frame, % of samples:")
    summary.extend(f"  {share:5.1f} %  {frame}" for share, frame in own)
    summary.append("on stack (inclusive), % of samples:")
    summary.extend(f"  {share:5.1f} %  {frame}" for share, frame in inclusive)
