"""How busy the gateway's event loop was, and with what, from a ``py-spy`` profile.

Run: ``py-spy record -p PID --threads --idle --format raw -r 50 -d 150 -o start.raw`` on a
gateway (``bench/startup_bench.py`` starts one), then
``.venv/bin/python bench/loop_share.py start.raw [--top 30] [--match mcp_aggregator/]``.

A sample of the main thread is *idle* when its innermost frame is the event loop's own
``run`` (uvloop waits in C below it) or it has no Python frame; every other sample is the
loop running a callback (or waiting for the GIL to run one). Prints the busy share and, for
each function whose name matches ``--match``, the share of all main-thread samples it was
on the stack for (inclusive).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r":\d+\)$")
_IDLE_LEAVES = ("Runner.run (asyncio/runners.py", "run (asyncio/runners.py")


@dataclass
class LoopShare:
    samples: int = 0
    idle: int = 0
    inclusive: Counter[str] = field(default_factory=Counter)

    @property
    def busy_share(self) -> float:
        return (self.samples - self.idle) / self.samples if self.samples else 0.0


def loop_share(lines: Iterable[str], match: str = "mcp_aggregator/") -> LoopShare:
    """Reads py-spy's raw (collapsed) lines, ``thread (id): name;frame;...;frame count``."""
    share = LoopShare()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        thread, *frames = stack.split(";")
        if "MainThread" not in thread:
            continue
        n = int(count)
        share.samples += n
        if not frames or frames[-1].startswith(_IDLE_LEAVES):
            share.idle += n
            continue
        for frame in {_LINE.sub(")", frame) for frame in frames}:
            if match in frame:
                share.inclusive[frame] += n
    return share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--match", default="mcp_aggregator/")
    args = parser.parse_args()
    with args.raw.open() as lines:
        share = loop_share(lines, args.match)
    print(f"main thread: {share.samples} samples, busy {share.busy_share:.1%}")
    for frame, n in share.inclusive.most_common(args.top):
        print(f"{n / share.samples:6.1%}  {frame}")


if __name__ == "__main__":
    main()
