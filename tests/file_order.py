"""The order the test files run in: the longest first.

``./run-tests.sh`` gives two workers whole files (``--dist loadfile``), in collection order
(``--no-loadscope-reorder``; xdist's own reorder goes by test count, so a bench smoke of one
test that runs a minute started near the end and one worker finished alone while the other
waited). Taking the files by their measured seconds, longest first, is the classic
longest-processing-time rule: what starts last is short. The seconds come from a junit XML of
a whole run (``scripts/suite_file_seconds.py``); a file not measured yet counts as the median.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

SECONDS_FILE = Path(__file__).with_name("file_seconds.json")


class _HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


Item = TypeVar("Item", bound=_HasNodeId)


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(files: Iterable[str], seconds: Mapping[str, float]) -> list[str]:
    """``files`` by their seconds, longest first; unmeasured files at the median, ties in order."""
    files = list(dict.fromkeys(files))
    median = statistics.median(seconds.values()) if seconds else 0.0
    position = {name: index for index, name in enumerate(files)}
    return sorted(files, key=lambda name: (-seconds.get(name, median), position[name]))


def ordered(items: Sequence[Item], seconds: Mapping[str, float]) -> list[Item]:
    """``items`` grouped by file, the files longest first, each file's own order kept."""
    rank = {name: index for index, name in enumerate(longest_first((file_of(i.nodeid) for i in items), seconds))}
    position = {id(item): index for index, item in enumerate(items)}
    return sorted(items, key=lambda item: (rank[file_of(item.nodeid)], position[id(item)]))


def read_seconds(path: Path = SECONDS_FILE) -> dict[str, float]:
    """The measured seconds per test file (empty when there is no such file)."""
    if not path.exists():
        return {}
    loaded = json.loads(path.read_text())
    return {str(name): float(value) for name, value in loaded.items()}
