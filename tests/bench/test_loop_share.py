from __future__ import annotations

from bench.loop_share import loop_share

RAW = [
    "thread (1): MainThread;main (a.py:1);Runner.run (asyncio/runners.py:118) 6\n",
    "thread (1): MainThread;main (a.py:1);build (mcp_aggregator/catalog/catalog.py:71) 3\n",
    "thread (1): MainThread;main (a.py:1);build (mcp_aggregator/catalog/catalog.py:63);"
    "name (mcp_aggregator/catalog/naming.py:9) 1\n",
    "thread (1): MainThread 2\n",
    "thread (7): onnx-embed_0;run (mcp_aggregator/search/embedder.py:5) 40\n",
    "\n",
]


def test_the_loops_busy_share_counts_main_thread_samples_off_the_loops_own_wait() -> None:
    share = loop_share(RAW)
    assert (share.samples, share.idle) == (12, 8)
    assert share.busy_share == 4 / 12


def test_a_function_counts_once_per_sample_whatever_its_lines() -> None:
    share = loop_share(RAW)
    assert share.inclusive == {
        "build (mcp_aggregator/catalog/catalog.py)": 4,
        "name (mcp_aggregator/catalog/naming.py)": 1,
    }
