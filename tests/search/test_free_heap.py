"""``free_heap``: memory the process freed goes back to the operating system."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.search import free_heap as heap


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(heap._TRIM is None, reason="only glibc keeps freed memory this way")
def test_freed_blocks_between_live_ones_leave_the_rss_once_the_heap_is_freed() -> None:
    # 100 KB blocks sit on glibc's heap; one kept in every ten pins the heap's top, so the
    # freed ones are holes glibc would keep for good without a trim.
    blocks = [b"x" * 100_000 for _ in range(600)]
    kept = blocks[::10]
    del blocks
    before = _rss_mb()
    heap.free_heap(collect=False)
    after = _rss_mb()
    assert before - after >= 20, (before, after)
    assert len(kept) == 60
